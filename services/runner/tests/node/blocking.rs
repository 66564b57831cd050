//! Blocked and disabled packages and tools, applied live to an open session of the official
//! client: gone from every list, calls answer -32601, `list_changed` announces each change.

use serde_json::json;

use crate::pyclient::{Driver, error_code};
use crate::support;

const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";
const RESOURCES_CHANGED: &str = "notifications/resources/list_changed";
const METHOD_NOT_FOUND: i64 = -32601;

#[tokio::test]
async fn blocking_a_package_and_a_tool_applies_live() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let (mut client, _) = Driver::connect(&node.url).await;
    let before = client.list().await;
    assert_eq!(before.tools.len(), 7, "{before:?}");

    node.set_policy(|p| p.blocked = vec!["weather".into(), "notes.add".into()]);
    assert_eq!(client.wait(TOOLS_CHANGED, 1).await, 1, "the open session hears that tools changed");
    assert_eq!(client.wait(PROMPTS_CHANGED, 1).await, 1);
    assert_eq!(client.wait(RESOURCES_CHANGED, 1).await, 1);
    let blocked = client.list().await;
    assert_eq!(blocked.tools, ["notes.divide", "notes.shout", "notes.search"]);
    assert_eq!(blocked.resources, ["notes://index"]);
    assert_eq!(blocked.templates, ["notes://note/{name}"]);
    assert_eq!(blocked.prompts, ["notes.summarize"]);

    let add = client.call("notes.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(error_code(&add), Some(METHOD_NOT_FOUND), "blocked tool: {add}");
    let forecast = client.call("weather.forecast", json!({"city": "oslo"})).await;
    assert_eq!(
        error_code(&forecast),
        Some(METHOD_NOT_FOUND),
        "tool of a blocked package: {forecast}"
    );
    let cities = client.send(json!({"op": "read", "uri": "weather://cities"})).await;
    assert_eq!(
        error_code(&cities),
        Some(METHOD_NOT_FOUND),
        "resource of a blocked package: {cities}"
    );
    let templated = client.send(json!({"op": "read", "uri": "weather://forecast/oslo"})).await;
    assert_eq!(
        error_code(&templated),
        Some(METHOD_NOT_FOUND),
        "template of a blocked package: {templated}"
    );
    let prompt = client
        .send(json!({"op": "prompt", "name": "weather.plan_trip", "arguments": {"city": "oslo"}}))
        .await;
    assert_eq!(
        error_code(&prompt),
        Some(METHOD_NOT_FOUND),
        "prompt of a blocked package: {prompt}"
    );
    let divide = client.call("notes.divide", json!({"a": 9, "b": 3})).await;
    assert_eq!(
        divide["result"]["structuredContent"]["result"], 3.0,
        "the rest still serves: {divide}"
    );
    assert_eq!(node.metric("ramen_mcp_blocked_calls_total").await, Some(5.0));

    node.set_policy(|_| {});
    assert_eq!(client.wait(TOOLS_CHANGED, 2).await, 2, "unblocking is announced too");
    assert_eq!(client.list().await.tools, before.tools, "unblocking brings everything back");
    let add = client.call("notes.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(add["result"]["structuredContent"]["result"], 3, "{add}");
    client.quit().await;
    node.stop().await;
}

#[tokio::test]
async fn disabling_a_package_applies_live() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let (mut client, _) = Driver::connect(&node.url).await;

    node.set_policy(|p| p.disabled_packages = vec!["notes".into()]);
    assert_eq!(client.wait(TOOLS_CHANGED, 1).await, 1);
    let disabled = client.list().await;
    assert!(disabled.tools.iter().all(|t| t.starts_with("weather.")), "{disabled:?}");
    assert_eq!(disabled.resources, ["weather://cities"]);
    assert_eq!(disabled.prompts, ["weather.plan_trip"]);
    let add = client.call("notes.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(error_code(&add), Some(METHOD_NOT_FOUND), "{add}");
    let index = client.send(json!({"op": "read", "uri": "notes://index"})).await;
    assert_eq!(error_code(&index), Some(METHOD_NOT_FOUND), "{index}");
    let prompt = client
        .send(json!({"op": "prompt", "name": "notes.summarize", "arguments": {"name": "broth"}}))
        .await;
    assert_eq!(error_code(&prompt), Some(METHOD_NOT_FOUND), "{prompt}");

    // A policy change that leaves every list as it was announces nothing.
    node.set_policy(|p| {
        p.disabled_packages = vec!["notes".into()];
        p.blocked = vec!["notes.add".into()];
    });
    node.set_policy(|_| {});
    assert_eq!(client.wait(TOOLS_CHANGED, 2).await, 2);
    let back = client.list().await;
    let settle = std::time::Duration::from_millis(300);
    assert_eq!(
        client.count_after(TOOLS_CHANGED, settle).await,
        2,
        "no notification for the change nobody could see"
    );
    assert!(back.tools.contains(&"notes.add".to_owned()), "{back:?}");
    let add = client.call("notes.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(add["result"]["structuredContent"]["result"], 3, "{add}");
    client.quit().await;
    node.stop().await;
}

/// A mounted policy file (how a Kubernetes worker gets its policy when no push reaches it):
/// read at start, followed while the node runs, and a bad file in between does not stop it.
#[tokio::test]
async fn a_policy_file_is_read_at_start_and_followed() {
    let policy_dir = tempfile::tempdir().unwrap();
    let path = policy_dir.path().join("policy.toml");
    let write = |version: u64, blocked: &[&str]| {
        let policy = ramen_runner::PolicyConfig {
            version,
            require_key: true,
            key_hashes: vec![ramen_node_contract::key_hash(support::KEY).into()],
            blocked: blocked.iter().map(|b| b.to_string()).collect(),
            ..Default::default()
        };
        // As the kubelet does: the new content appears at once (rename), never half-written.
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, toml::to_string(&policy).unwrap()).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    };
    write(3, &["weather"]);
    let node = support::start("examples/hello-repo", |c| c.policy_file = Some(path.clone())).await;
    let (mut client, _) = Driver::connect(&node.url).await;
    assert!(
        client.list().await.tools.iter().all(|t| !t.starts_with("weather.")),
        "the file's policy is in force from the start"
    );

    write(4, &["notes.add"]);
    assert_eq!(client.wait(TOOLS_CHANGED, 1).await, 1, "a newer file is applied live");
    let tools = client.list().await.tools;
    assert!(tools.iter().any(|t| t.starts_with("weather.")), "{tools:?}");
    assert!(!tools.contains(&"notes.add".to_owned()), "{tools:?}");

    std::fs::write(&path, "ip_allow = [\"not a cidr\"]").unwrap();
    write(5, &[]);
    assert_eq!(client.wait(TOOLS_CHANGED, 2).await, 2, "a bad file does not stop the watch");
    let add = client.call("notes.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(add["result"]["structuredContent"]["result"], 3, "{add}");
    client.quit().await;
    node.stop().await;
}
