//! Sessions over REST: refresh rotation and reuse, the cookie path, logout, and MCP keys.

use std::time::Duration;

use ramen_proto::auth::v1::Role;
use ramen_proto::events::v1::{McpKeyChange, McpKeyChanged};
use reqwest::Method;
use serde_json::json;

use crate::support::{PASSWORD, Stack};

#[tokio::test]
async fn refresh_rotates_and_a_reused_token_ends_the_session() {
    let stack = Stack::start().await;
    stack.user("ana@example.com", false).await;
    let first = stack.login("ana@example.com", PASSWORD).await.body;
    let refresh = |token: &str| json!({ "refresh_token": token });
    let old = first["refresh_token"].as_str().unwrap().to_owned();
    let second = stack.call(Method::POST, "/api/auth/refresh", None, Some(refresh(&old))).await;
    assert_eq!(second.status, 200, "{}", second.body);
    let newer = second.body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(newer, old);
    let reused = stack.call(Method::POST, "/api/auth/refresh", None, Some(refresh(&old))).await;
    assert_eq!((reused.status.as_u16(), reused.code()), (401, "unauthenticated"));
    let after = stack.call(Method::POST, "/api/auth/refresh", None, Some(refresh(&newer))).await;
    assert_eq!(after.status, 401, "the whole family is revoked");
}

#[tokio::test]
async fn the_refresh_cookie_needs_csrf_and_logout_clears_the_cookies() {
    let stack = Stack::start().await;
    stack.user("bo@example.com", false).await;
    let session = stack.login("bo@example.com", PASSWORD).await;
    let jar: String = session
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let csrf = session.body["csrf_token"].as_str().unwrap();
    let no_csrf =
        stack.send(stack.http.post(stack.url("/api/auth/refresh")).header("cookie", &jar)).await;
    assert_eq!((no_csrf.status.as_u16(), no_csrf.code()), (403, "csrf"));
    let refreshed = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/refresh"))
                .header("cookie", &jar)
                .header("x-csrf-token", csrf),
        )
        .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let token = refreshed.body["refresh_token"].as_str().unwrap().to_owned();
    let out = stack
        .call(Method::POST, "/api/auth/logout", None, Some(json!({ "refresh_token": token })))
        .await;
    assert_eq!(out.status, 204);
    let cleared: Vec<_> =
        out.headers.get_all("set-cookie").iter().map(|c| c.to_str().unwrap().to_owned()).collect();
    assert!(cleared.len() == 3 && cleared.iter().all(|c| c.contains("Max-Age=0")), "{cleared:?}");
    let gone = stack
        .call(Method::POST, "/api/auth/refresh", None, Some(json!({ "refresh_token": token })))
        .await;
    assert_eq!(gone.status, 401);
}

#[tokio::test]
async fn mcp_keys_over_rest_show_the_plaintext_once_and_revocation_reaches_the_bus() {
    let stack = Stack::start().await;
    stack.group("alpha").await;
    let admin = stack.user("admin@alpha.dev", false).await;
    stack.member("alpha", &admin, Role::Admin).await;
    let token = stack.token("admin@alpha.dev").await;
    let mut events =
        stack.platform.bus.subscribe(&ramen_service::subject::<McpKeyChanged>()).await.unwrap();

    let created = stack
        .call(
            Method::POST,
            "/api/groups/alpha/keys",
            Some(&token),
            Some(json!({ "name": "ci", "zones": ["z1"] })),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let plaintext = created.body["plaintext"].as_str().unwrap().to_owned();
    let id = created.body["key"]["id"].as_str().unwrap().to_owned();
    let listed = stack.call(Method::GET, "/api/groups/alpha/keys", Some(&token), None).await;
    let text = listed.body.to_string();
    assert!(
        text.contains(created.body["key"]["prefix"].as_str().unwrap())
            && !text.contains(&plaintext[11..]),
        "{text}"
    );
    assert!(listed.body["items"][0].get("plaintext").is_none());

    let revoked = stack
        .call(Method::DELETE, &format!("/api/groups/alpha/keys/{id}"), Some(&token), None)
        .await;
    assert_eq!(revoked.status, 200);
    assert!(revoked.body["revoked_at"].is_string());
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let message = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("event")
            .unwrap();
        seen.push((message.payload.key_id.clone(), message.payload.change()));
    }
    assert_eq!(seen, vec![(id.clone(), McpKeyChange::Created), (id, McpKeyChange::Revoked)]);
}
