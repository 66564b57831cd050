//! Helpers shared by the tests: a started double with a client, error inspection, waits.

use std::time::Duration;

use kube::{Api, Client};
use ramen_kube_double::KubeDouble;
use serde_json::Value;

pub const WAIT: Duration = Duration::from_secs(15);

pub async fn start() -> (KubeDouble, Client) {
    let double = KubeDouble::start().await.expect("the double starts");
    let client = double.client().await.expect("a client for the double");
    (double, client)
}

/// (code, reason, message) of an API error.
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => {
            (status.code, status.reason.clone(), status.message.clone())
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

pub async fn namespace(client: &Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    api.create(&Default::default(), &ns).await.expect("namespace created");
}

pub fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    ramen_testkit::eventually(what, WAIT, check).await
}

/// Whether a pod's status says Ready.
pub fn is_ready(status: &k8s_openapi::api::core::v1::PodStatus) -> bool {
    status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
}
