//! MCP keys at the edge: a request without a live key of the environment is refused with 401
//! before any node is chosen — as the node would, but without a worker ever seeing it, and
//! with a revocation or an expiry counting at once, nothing pushed. Here the environment has
//! no worker yet, so a request the edge lets through answers 503 (no worker to take it): a
//! 401 can only be the edge's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ramen_proto::auth::v1::*;
use ramen_testkit::eventually;
use reqwest::Method;
use serde_json::json;

use crate::support::{Answer, Stack, as_service};

async fn mcp(stack: &Stack, key: Option<&str>) -> Answer {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let mut request = stack
        .http
        .request(Method::POST, stack.url("/mcp/team/prod"))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    stack.send(request).await
}

async fn create_key(stack: &Stack, name: &str, expires_in: Option<Duration>) -> (String, String) {
    let expires_at = expires_in.map(|d| {
        let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + d;
        prost_types::Timestamp { seconds: at.as_secs() as i64, nanos: at.subsec_nanos() as i32 }
    });
    let request = CreateMcpKeyRequest {
        group: "team".into(),
        name: name.into(),
        environments: vec![],
        zones: vec![],
        expires_at,
    };
    let created =
        stack.grpc().await.create_mcp_key(as_service(request)).await.unwrap().into_inner();
    (created.key.unwrap().id, created.plaintext)
}

#[tokio::test]
async fn the_edge_refuses_missing_unknown_revoked_and_expired_keys_before_any_node() {
    let stack = Stack::start_full().await;
    stack.user("root@example.com", true).await;
    let root = stack.token("root@example.com").await;
    let zone = json!({ "name": "z1", "provider": "local" });
    assert!(
        stack.call(Method::POST, "/api/zones", Some(&root), Some(zone)).await.status.is_success()
    );
    let group = json!({ "name": "team", "repo_url": "/nonexistent/repo", "default_ref": "main" });
    assert!(
        stack.call(Method::POST, "/api/groups", Some(&root), Some(group)).await.status.is_success()
    );
    let env = json!({ "name": "prod", "git_ref": "main", "zones": ["z1"] });
    let made =
        stack.call(Method::POST, "/api/groups/team/environments", Some(&root), Some(env)).await;
    assert!(made.status.is_success(), "{}", made.body);

    let (_, good) = create_key(&stack, "good", None).await;
    let (_, idle) = create_key(&stack, "idle", None).await;
    let passed = mcp(&stack, Some(&good)).await;
    assert_ne!(passed.status, 401, "a live key passes the edge: {}", passed.body);
    let _ = idle; // never used: its "last used" stays empty

    // "Last used": the edge reports the keys it let through; the list shows when, to the
    // minute, and "never" for a key no request carried.
    eventually("the used key shows when it was last used", Duration::from_secs(10), || async {
        let keys = stack.call(Method::GET, "/api/groups/team/keys", Some(&root), None).await;
        let items = keys.body["items"].as_array().cloned().unwrap_or_default();
        let of = |name: &str| items.iter().find(|k| k["name"] == name).cloned();
        match (of("good"), of("idle")) {
            (Some(good), Some(idle)) if good["last_used_at"].is_string() => {
                if idle["last_used_at"].is_null() { Ok(()) } else { Err(format!("idle: {idle}")) }
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    for (what, key) in
        [("no key", None), ("an unknown key", Some("rk_made-up")), ("a malformed header", Some(""))]
    {
        let refused = mcp(&stack, key).await;
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        let challenge = refused.headers.get("www-authenticate").and_then(|v| v.to_str().ok());
        assert_eq!(challenge, Some(r#"Bearer realm="ramen", error="invalid_token""#), "{what}");
        // Answered ahead of the router (the edge's fast route), with the request id every
        // gateway answer has.
        let id = refused.headers.get("x-request-id").and_then(|v| v.to_str().ok());
        assert!(id.is_some_and(|id| uuid::Uuid::parse_str(id).is_ok()), "{what}: {id:?}");
    }
    let given = stack
        .http
        .post(stack.url("/mcp/team/prod"))
        .header("x-request-id", "mcp-call-9")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }));
    let given = stack.send(given).await;
    assert_eq!(given.status, 401);
    assert_eq!(given.headers["x-request-id"], "mcp-call-9", "a client's id is echoed");

    // Made after the edge read the keys: works on first use.
    let (fresh_id, fresh) = create_key(&stack, "fresh", None).await;
    assert_ne!(mcp(&stack, Some(&fresh)).await.status, 401, "a new key on its first use");

    // Revoked: refused at the edge within a moment, nothing pushed anywhere.
    let revoke = RevokeMcpKeyRequest { group: "team".into(), key_id: fresh_id };
    stack.grpc().await.revoke_mcp_key(as_service(revoke)).await.unwrap();
    eventually("the revoked key refused", Duration::from_secs(5), || async {
        let status = mcp(&stack, Some(&fresh)).await.status;
        if status == 401 { Ok(()) } else { Err(format!("{status}")) }
    })
    .await;
    assert_ne!(mcp(&stack, Some(&good)).await.status, 401, "the other key still passes");

    // Expiring: passes until its expiry, then 401 with no change made to it.
    let (_, brief) = create_key(&stack, "brief", Some(Duration::from_secs(3))).await;
    let before = mcp(&stack, Some(&brief)).await.status;
    eventually("the key expires", Duration::from_secs(15), || async {
        let status = mcp(&stack, Some(&brief)).await.status;
        if status == 401 { Ok(()) } else { Err(format!("{status}")) }
    })
    .await;
    assert_ne!(before, 401, "accepted before its expiry");
}
