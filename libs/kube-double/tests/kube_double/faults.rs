//! Fault injection: error statuses for matching requests, and the recorded requests.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use ramen_kube_double::RequestMatch;
use serde_json::json;

use super::common::{api_error, from_json, start};

#[tokio::test]
async fn injected_errors_hit_only_the_matching_requests_and_only_count_times() {
    let (double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &from_json(json!({"metadata": {"name": "c"}})))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/configmaps/c";
    let gets = || double.requests().iter().filter(|r| r.method == "GET" && r.path == path).count();

    // kube retries 503 three times by itself: two failures are absorbed...
    double.fail_next(RequestMatch::new("GET", path), 503, 2);
    assert!(cms.get("c").await.is_ok());
    assert_eq!(gets(), 3);
    // ...and a client without retries (as ramen's zone provider is) sees the first one.
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&double.kubeconfig("plain")).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    config.default_retry = false;
    let plain: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    double.fail_next(RequestMatch::new("GET", path), 503, 100);
    let before = gets();
    let (code, reason, _) = api_error(plain.get("c").await);
    assert_eq!((code, reason.as_str()), (503, "ServiceUnavailable"));
    assert_eq!(gets(), before + 1, "one GET, no retry");
    double.clear_faults();
    // Other methods and paths are untouched; 500 is not retried.
    double.fail_next(RequestMatch::new("POST", "/api/v1/namespaces/default/configmaps"), 500, 1);
    assert!(cms.get("c").await.is_ok());
    let (code, reason, _) = api_error(
        cms.create(&PostParams::default(), &from_json(json!({"metadata": {"name": "d"}}))).await,
    );
    assert_eq!((code, reason.as_str()), (500, "InternalError"));
    // 429 carries Retry-After, which kube honours before its retry.
    double.fail_next(RequestMatch::any_method("/api/v1/namespaces/default/configmaps"), 429, 1);
    let started = std::time::Instant::now();
    assert!(cms.get("c").await.is_ok());
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "Retry-After was honoured");

    let posts: Vec<_> = double.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 2);
    let sent = posts[1].json().unwrap();
    assert_eq!(sent["metadata"]["name"], "d");
    assert_eq!(posts[1].content_type.as_deref(), Some("application/json"));
}
