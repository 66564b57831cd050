//! Captures ALL log output (every crate, TRACE, span fields included) of a flow that creates,
//! lists, uses, mistypes and deletes a secret through the REST API and the deploy-time
//! resolution, and checks the value never appears. Its own test binary, because the capture is
//! the process-wide subscriber.

#[path = "gateway/support.rs"]
#[allow(dead_code)]
mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use ramen_proto::auth::v1::{ResolveSecretsRequest, Role};
use reqwest::Method;
use serde_json::json;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;

use support::{Stack, as_service};

const VALUE: &str = "sk-live-7f3a9c1e5b2d4f60a8e1c3b5d7f9a2c4";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn a_secret_value_never_reaches_the_logs() {
    let capture = Capture::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::FULL)
        .with_ansi(false)
        .with_writer(capture.clone())
        .init();

    let stack = Stack::start().await;
    stack.group("alpha").await;
    let admin = stack.user("admin@alpha.dev", false).await;
    stack.member("alpha", &admin, Role::Admin).await;
    let token = stack.token("admin@alpha.dev").await;

    let set = stack
        .call(
            Method::PUT,
            "/api/groups/alpha/secrets/API_KEY",
            Some(&token),
            Some(json!({ "value": VALUE, "environment": "prod" })),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let listed = stack.call(Method::GET, "/api/groups/alpha/secrets", Some(&token), None).await;
    assert!(!listed.body.to_string().contains(VALUE));
    // Mistakes around the value: a bad name, a value in a field of the wrong type, a stranger.
    let bad_name = stack
        .call(
            Method::PUT,
            "/api/groups/alpha/secrets/BAD-NAME",
            Some(&token),
            Some(json!({ "value": VALUE })),
        )
        .await;
    // A path name that breaks its rule names nothing (the document's rule, checked first).
    assert_eq!(bad_name.status, 404);
    let mistyped = stack
        .call(
            Method::PUT,
            "/api/groups/alpha/secrets/X",
            Some(&token),
            Some(json!({ "value": VALUE, "zone": [VALUE] })),
        )
        .await;
    assert_eq!(mistyped.status, 400);
    assert!(!mistyped.body.to_string().contains(VALUE), "{}", mistyped.body);
    let anonymous = stack
        .call(
            Method::PUT,
            "/api/groups/alpha/secrets/API_KEY",
            None,
            Some(json!({ "value": VALUE })),
        )
        .await;
    assert_eq!(anonymous.status, 401);

    // The deploy pipeline uses it.
    let resolve = ResolveSecretsRequest {
        group: "alpha".into(),
        environment: "prod".into(),
        zone: "z1".into(),
    };
    let resolved =
        stack.grpc().await.resolve_secrets(as_service(resolve)).await.unwrap().into_inner();
    assert_eq!(resolved.secrets[0].value, VALUE);
    tracing::info!(?resolved, "what a careless caller would log");

    let deleted = stack
        .call(
            Method::DELETE,
            "/api/groups/alpha/secrets/API_KEY?environment=prod",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(deleted.status, 204);

    let logs = String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("secret.set") || logs.contains("/api/groups/alpha/secrets"),
        "the capture saw the flow ({} bytes)",
        logs.len()
    );
    assert!(
        logs.len() > 10_000,
        "TRACE output of the whole flow was captured ({} bytes)",
        logs.len()
    );
    let leaked: Vec<&str> = logs.lines().filter(|line| line.contains(VALUE)).collect();
    assert!(leaked.is_empty(), "the secret value reached the logs:\n{}", leaked.join("\n"));
}
