//! Malformed messages and session rules, with raw requests (a real client never sends these).

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::support::{self, KEY};
use crate::transport::Raw;

async fn post_text(raw: &Raw, body: &str) -> (u16, Value) {
    post_bytes(raw, body.as_bytes().to_vec()).await
}

async fn post_bytes(raw: &Raw, body: Vec<u8>) -> (u16, Value) {
    let response = raw
        .http
        .post(&raw.url)
        .header(AUTHORIZATION, format!("Bearer {KEY}"))
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .header("mcp-session-id", raw.session.as_deref().unwrap_or_default())
        .body(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn malformed_and_invalid_messages_get_json_rpc_errors() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;

    let (status, body) = post_text(&raw, r#"{"jsonrpc":"2.0","id":1,"method":"ping""#).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32700)),
        "truncated JSON: {body}"
    );
    assert!(body["id"].is_null());
    let (status, body) = post_text(&raw, "not json at all").await;
    assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(-32700)), "{body}");

    let (status, body) = post_text(&raw, r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32600)),
        "wrong jsonrpc version: {body}"
    );
    assert_eq!(body["id"], "a", "the id is echoed when it could be read");
    for invalid in [
        r#"{"jsonrpc":"2.0","id":2}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":7}"#,
        r#"[1, 2]"#,
        r#""a string""#,
    ] {
        let (status, body) = post_text(&raw, invalid).await;
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32600)),
            "{invalid}: {body}"
        );
    }

    let unknown = raw.call(4, "tools/frobnicate", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], 4);
    let no_name = raw.call(5, "tools/call", json!({"arguments": {}})).await;
    assert_eq!(no_name["error"]["code"], -32602, "{no_name}");
    let ping = raw.call(6, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "the session still works: {ping}");
    node.stop().await;
}

/// Bodies a hostile client sends to exhaust a parser: each is refused with a parse error
/// naming the problem, and the session goes on.
#[tokio::test]
async fn deeply_nested_and_invalid_utf8_bodies_are_parse_errors() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;

    let deep = |open: &str, close: &str, depth: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"notes.add","arguments":{}1{}}}}}"#,
            open.repeat(depth),
            close.repeat(depth)
        )
    };
    for (what, body) in [
        ("100,000 nested arrays", deep("[", "]", 100_000)),
        ("100,000 nested objects", deep(r#"{"a":"#, "}", 100_000)),
        ("a batch nested 100,000 deep", "[".repeat(100_000) + &"]".repeat(100_000)),
    ] {
        let (status, body) = post_text(&raw, &body).await;
        assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(-32700)), "{what}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("nested deeper than 128"),
            "{what}: the refusal says why: {message}"
        );
    }

    let mut invalid_utf8 = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notes.shout","arguments":{"text":""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
    invalid_utf8.extend_from_slice(br#""}}}"#);
    let (status, body) = post_bytes(&raw, invalid_utf8).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(-32700)), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unicode") || message.contains("UTF-8"), "{message}");

    let ping = raw.call(3, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "the session still works: {ping}");
    node.stop().await;
}

#[tokio::test]
async fn session_and_version_rules() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    let mut raw = Raw::new(&node.url);

    let response = raw.post(&list).send().await.unwrap();
    assert_eq!(response.status(), 400, "no Mcp-Session-Id");
    raw.session = Some("0123456789abcdef0123456789abcdef".into());
    let response = raw.post(&list).send().await.unwrap();
    assert_eq!(response.status(), 404, "unknown session");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);

    raw.initialize().await;
    raw.version = Some("1999-01-01");
    let response = raw.post(&list).send().await.unwrap();
    assert_eq!(response.status(), 400, "unsupported MCP-Protocol-Version");
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("2025-11-25"),
        "names what is supported: {body}"
    );
    raw.version = Some("2025-11-25");

    let get = |accept: &'static str| {
        raw.http
            .get(&raw.url)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header(ACCEPT, accept)
            .header("mcp-session-id", raw.session.clone().unwrap())
    };
    assert_eq!(
        get("application/json").send().await.unwrap().status(),
        406,
        "GET is an event stream"
    );
    let stream = get("text/event-stream").send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()[CONTENT_TYPE], "text/event-stream");

    let delete = |session: String| {
        raw.http
            .delete(&raw.url)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header("mcp-session-id", session)
    };
    let session = raw.session.clone().unwrap();
    assert_eq!(delete(session.clone()).send().await.unwrap().status(), 200);
    let mut body = stream.bytes_stream();
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        futures::StreamExt::count(&mut body),
    )
    .await;
    assert!(ended.is_ok(), "the GET stream ends with its session, not at the next keep-alive");
    assert_eq!(delete(session).send().await.unwrap().status(), 404, "already ended");
    assert_eq!(
        raw.post(&list).send().await.unwrap().status(),
        404,
        "a request on the ended session"
    );
    node.stop().await;
}
