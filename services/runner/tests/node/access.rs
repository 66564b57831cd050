//! Who may call: MCP keys (401), the IP allow-list with X-Forwarded-For from trusted proxies
//! only, and Origin validation (403). Policies are swapped live on one node.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, ORIGIN, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::support::{self, KEY};

fn initialize(url: &str) -> RequestBuilder {
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    reqwest::Client::new()
        .post(url)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string())
}

fn with_key(url: &str) -> RequestBuilder {
    initialize(url).header(AUTHORIZATION, format!("Bearer {KEY}"))
}

async fn status(request: RequestBuilder) -> StatusCode {
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn calls_without_a_valid_key_get_401() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    for (what, request) in [
        ("no key", initialize(&node.url)),
        ("wrong key", initialize(&node.url).header(AUTHORIZATION, "Bearer rk_test_wrong")),
        ("another scheme", initialize(&node.url).header(AUTHORIZATION, format!("Basic {KEY}"))),
        ("empty bearer", initialize(&node.url).header(AUTHORIZATION, "Bearer ")),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{what}");
        let challenge =
            response.headers().get(WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned());
        assert!(
            challenge.as_deref().is_some_and(|c| c.starts_with("Bearer ")),
            "{what}: {challenge:?}"
        );
        let body: Value = response.json().await.unwrap();
        assert!(body["error"]["code"].is_i64(), "a JSON-RPC error body: {body}");
    }
    let http = reqwest::Client::new();
    let get = http.get(&node.url).header(ACCEPT, "text/event-stream").header("mcp-session-id", "x");
    assert_eq!(status(get).await, 401, "GET needs the key too (and learns nothing about sessions)");
    assert_eq!(
        status(http.delete(&node.url).header("mcp-session-id", "x")).await,
        401,
        "DELETE too"
    );
    assert_eq!(status(with_key(&node.url)).await, 200, "the right key");

    // Keys are part of the live policy: a rotated-out key stops working at once.
    node.set_policy(|p| p.key_hashes = vec![ramen_node_contract::key_hash("rk_test_rotated")]);
    assert_eq!(status(with_key(&node.url)).await, 401);
    let rotated = initialize(&node.url).header(AUTHORIZATION, "Bearer rk_test_rotated");
    assert_eq!(status(rotated).await, 200);
    node.stop().await;
}

#[tokio::test]
async fn ip_allow_list_and_origin_get_403() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let url = &node.url;
    let forwarded = |ip: &str| with_key(url).header("x-forwarded-for", ip.to_owned());

    node.set_policy(|p| p.ip_allow = vec!["10.0.0.0/8".into()]);
    assert_eq!(status(with_key(url)).await, 403, "127.0.0.1 is not in 10.0.0.0/8");
    assert_eq!(
        status(forwarded("10.1.2.3")).await,
        403,
        "X-Forwarded-For from an untrusted peer is ignored"
    );
    assert_eq!(status(initialize(url)).await, 403, "the address is checked before the key");

    node.set_policy(|p| p.ip_allow = vec!["192.0.2.1".into(), "127.0.0.0/8".into()]);
    assert_eq!(status(with_key(url)).await, 200, "a listed CIDR");

    node.set_policy(|p| {
        p.ip_allow = vec!["10.0.0.0/8".into(), "2001:db8::/32".into()];
        p.trusted_proxies = vec!["127.0.0.1/32".into()];
    });
    assert_eq!(status(forwarded("10.1.2.3")).await, 200, "believed from a trusted proxy");
    assert_eq!(status(forwarded("192.168.7.7")).await, 403, "a forwarded address outside the list");
    assert_eq!(
        status(forwarded("10.9.9.9, 127.0.0.1")).await,
        200,
        "trusted hops are skipped from the right"
    );
    assert_eq!(
        status(forwarded("10.9.9.9, 192.168.7.7")).await,
        403,
        "the right-most untrusted hop counts"
    );
    assert_eq!(status(forwarded("2001:db8::7")).await, 200, "IPv6");
    assert_eq!(status(forwarded("2001:db9::7")).await, 403, "IPv6 outside the list");
    assert_eq!(status(with_key(url)).await, 403, "the proxy itself is not a client");
    // A proxy such as HAProxy adds its own line: the client's first line is its own words.
    let two_lines = with_key(url)
        .header("x-forwarded-for", "10.9.9.9")
        .header("x-forwarded-for", "192.168.7.7");
    assert_eq!(status(two_lines).await, 403, "every line is read, the last one names the client");
    assert_eq!(status(forwarded("::ffff:10.1.2.3")).await, 200, "IPv4-mapped unmapped");
    for malformed in ["10.1.2.3:5000", "unknown", "10.1.2.3, "] {
        assert_eq!(
            status(forwarded(malformed)).await,
            400,
            "{malformed:?} is refused, not skipped"
        );
    }

    node.set_policy(|_| {});
    let origin = |o: &str| with_key(url).header(ORIGIN, o.to_owned());
    assert_eq!(status(origin("http://evil.example")).await, 403, "foreign Origin (DNS rebinding)");
    let own = format!("http://{}", node.worker().mcp_addr);
    assert_eq!(status(origin(&own)).await, 200, "same origin");
    node.set_policy(|p| p.allowed_origins = vec!["https://app.example".into()]);
    assert_eq!(status(origin("https://app.example")).await, 200, "an allowed origin");
    assert_eq!(status(origin("https://app.example.evil")).await, 403);
    node.stop().await;
}
