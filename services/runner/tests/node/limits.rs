//! The request body cap (413) and the in-flight cap (503 + Retry-After, never a queue).

use std::time::Instant;

use reqwest::header::RETRY_AFTER;
use serde_json::{Value, json};

use crate::support;
use crate::transport::Raw;

#[tokio::test]
async fn a_body_over_the_cap_gets_413() {
    let node = support::start("examples/hello-repo", |config| config.max_body_bytes = 4096).await;
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;
    let shout = |text: String| json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes.shout","arguments":{"text":text}}});

    let response = raw.post(&shout("a".repeat(3000))).send().await.unwrap();
    assert_eq!(response.status(), 200, "under the cap");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"].as_str().unwrap().len(), 3001);

    let response = raw.post(&shout("a".repeat(5000))).send().await.unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");

    // The worker series the operator guide lists are all served, each with group and zone.
    let metrics = reqwest::get(node.admin_url("/metrics")).await.unwrap().text().await.unwrap();
    let worker: Vec<String> = ramen_testkit::documented_metrics()
        .into_iter()
        .filter(|n| n.starts_with("ramen_mcp_") || n.starts_with("ramen_runtime_"))
        .collect();
    assert!(worker.len() >= 7, "{worker:?}");
    let missing = ramen_testkit::undocumented_in(&metrics, &worker);
    assert!(missing.is_empty(), "documented but not served: {missing:?}\n{metrics}");
    assert_eq!(node.metric("ramen_mcp_in_flight").await, Some(0.0), "carries group and zone");
    let cap = node.metric("ramen_mcp_in_flight_cap").await;
    let configured = node.node().settings.in_flight_cap as f64;
    assert_eq!(cap, Some(configured), "the cap in-flight is measured against");
    node.stop().await;
}

#[tokio::test]
async fn calls_over_the_in_flight_cap_get_503_with_retry_after() {
    let node = support::start("services/runner/tests/fixtures/slow-repo", |config| {
        config.in_flight_cap = 2
    })
    .await;
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;
    let raw = &raw;
    let sleep = |id: u64| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"slow.sleep","arguments":{"seconds":1.5}}});

    let started = Instant::now();
    let answers = futures::future::join_all((1..=3).map(|id| async move {
        let response = raw.post(&sleep(id)).send().await.unwrap();
        let status = response.status().as_u16();
        let retry_after =
            response.headers().get(RETRY_AFTER).map(|v| v.to_str().unwrap().to_owned());
        let body: Value = response.json().await.unwrap();
        (status, retry_after, body, started.elapsed())
    }))
    .await;

    let rejected: Vec<_> = answers.iter().filter(|a| a.0 == 503).collect();
    assert_eq!(rejected.len(), 1, "exactly one call over the cap of 2: {answers:?}");
    let (_, retry_after, body, after) = rejected[0];
    assert!(
        retry_after.as_deref().is_some_and(|s| s.parse::<u64>().is_ok()),
        "Retry-After seconds: {retry_after:?}"
    );
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(body["id"].as_u64().is_some(), "the error answers the request: {body}");
    for (status, _, body, finished) in answers.iter().filter(|a| a.0 != 503) {
        assert_eq!(*status, 200);
        assert_eq!(body["result"]["structuredContent"]["result"], "slept 1.5", "{body}");
        assert!(
            after < finished,
            "rejected at once, not queued behind the others: {after:?} vs {finished:?}"
        );
    }
    assert_eq!(node.metric("ramen_mcp_requests_total{method=\"tools/call\",package=\"slow\",outcome=\"overloaded\"}").await, Some(1.0));

    let stats = raw.call(9, "tools/call", json!({"name":"slow.stats"})).await;
    assert_eq!(
        stats["result"]["structuredContent"]["finished"], 2,
        "the rejected call never reached the tool: {stats}"
    );
    // Per tool: what the catalog serves is counted by name; a name it does not is not (the
    // label stays bounded by what the group deploys, whatever clients send).
    raw.call(10, "tools/call", json!({"name":"made.up"})).await;
    let tool = |name: &str, outcome: &str| {
        format!("ramen_mcp_tool_calls_total{{tool=\"{name}\",outcome=\"{outcome}\"}}")
    };
    assert_eq!(node.metric(&tool("slow.sleep", "ok")).await, Some(2.0));
    assert_eq!(node.metric(&tool("slow.sleep", "overloaded")).await, Some(1.0));
    assert_eq!(node.metric(&tool("slow.stats", "ok")).await, Some(1.0));
    let metrics = reqwest::get(node.admin_url("/metrics")).await.unwrap().text().await.unwrap();
    assert!(!metrics.contains("made.up"), "{metrics}");
    assert!(
        metrics.lines().any(|l| l.starts_with("ramen_mcp_tool_call_duration_seconds_count")
            && l.contains("tool=\"slow.sleep\"")
            && l.ends_with(" 3")),
        "{metrics}"
    );
    node.stop().await;
}

/// One key cannot take every session slot: past its cap it is refused (503, the reason
/// named), another key still opens sessions, and ending one gives its slot back.
#[tokio::test]
async fn sessions_are_bounded_per_key() {
    const OTHER: &str = "rk_test_other_key_0123";
    let node = support::start("examples/hello-repo", |config| {
        config.max_sessions_per_key = 3;
        config.policy.key_hashes.push(ramen_node_contract::key_hash(OTHER).into());
    })
    .await;
    let initialize = |key: &'static str| {
        let http = reqwest::Client::new();
        let url = node.url.clone();
        async move {
            http.post(url)
                .header("authorization", format!("Bearer {key}"))
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#)
                .send()
                .await
                .unwrap()
        }
    };
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let answer = initialize(support::KEY).await;
        assert_eq!(answer.status(), 200);
        sessions.push(answer.headers()["mcp-session-id"].to_str().unwrap().to_owned());
    }
    let refused = initialize(support::KEY).await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("this key holds its maximum of 3"),
        "{body}"
    );
    assert_eq!(initialize(OTHER).await.status(), 200, "another key is not held back");

    let ended = reqwest::Client::new()
        .delete(&node.url)
        .header("authorization", format!("Bearer {}", support::KEY))
        .header("mcp-session-id", &sessions[0])
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    assert_eq!(initialize(support::KEY).await.status(), 200, "the ended session's slot is free");
    node.stop().await;
}
