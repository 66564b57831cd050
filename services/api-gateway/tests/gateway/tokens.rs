//! What the gateway accepts as an access token, over real HTTP.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ramen_auth::token::{AccessClaims, TokenKeys};
use reqwest::Method;
use serde_json::json;

use crate::support::{JWT_SECRET, PASSWORD, Stack};

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn claims(user_id: &str) -> AccessClaims {
    AccessClaims {
        sub: user_id.into(),
        email: "root@example.com".into(),
        sa: true,
        mcp: false,
        iat: 0,
        exp: 0,
        sid: String::new(),
        kid: String::new(),
    }
}

#[tokio::test]
async fn tampered_expired_wrong_key_and_alg_none_tokens_are_refused() {
    let stack = Stack::start().await;
    let root = stack.user("root@example.com", true).await;
    let good = stack.token("root@example.com").await;
    assert_eq!(stack.call(Method::GET, "/api/users", Some(&good), None).await.status, 200);

    let keys = TokenKeys::new(JWT_SECRET.as_bytes(), None, std::time::Duration::from_secs(900));
    let (expired, _) = keys.issue(claims(&root), now() - 3600);
    let (wrong_key, _) = TokenKeys::new(
        b"another-key-that-is-also-long-enough-000000",
        None,
        std::time::Duration::from_secs(900),
    )
    .issue(claims(&root), now());
    let parts: Vec<&str> = good.split('.').collect();
    let mut payload: serde_json::Value =
        serde_json::from_slice(&B64URL.decode(parts[1]).unwrap()).unwrap();
    payload["sub"] = json!("someone-else");
    let tampered = format!("{}.{}.{}", parts[0], B64URL.encode(payload.to_string()), parts[2]);
    let header = json!({ "alg": "none", "typ": "JWT", "kid": keys.current_key_id() });
    let none = format!("{}.{}.", B64URL.encode(header.to_string()), parts[1]);
    for (what, token) in [
        ("expired", expired),
        ("wrong key", wrong_key),
        ("tampered", tampered),
        ("alg none", none),
        ("garbage", "x.y.z".into()),
    ] {
        let answer = stack.call(Method::GET, "/api/users", Some(&token), None).await;
        assert_eq!(answer.status, 401, "{what}: {}", answer.body);
        assert_eq!(answer.code(), "unauthenticated", "{what}");
    }
}

#[tokio::test]
async fn cookie_sessions_need_csrf_to_change_state_and_t_only_streams() {
    let stack = Stack::start().await;
    stack.user("root@example.com", true).await;
    let session = stack.login("root@example.com", PASSWORD).await;
    let cookies: Vec<String> = session
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(cookies.len(), 3);
    assert!(
        cookies.iter().all(|c| c.contains("SameSite=Strict") && !c.contains("Secure")),
        "{cookies:?}"
    );
    assert!(cookies[0].starts_with("ramen_access=") && cookies[0].contains("HttpOnly"));
    let jar: String =
        cookies.iter().map(|c| c.split(';').next().unwrap()).collect::<Vec<_>>().join("; ");
    let csrf = session.body["csrf_token"].as_str().unwrap().to_owned();

    let read = stack.send(stack.http.get(stack.url("/api/users")).header("cookie", &jar)).await;
    assert_eq!(read.status, 200, "reads work on the cookie alone");
    let body = json!({ "email": "new@example.com" });
    let forged = stack
        .send(stack.http.post(stack.url("/api/users")).header("cookie", &jar).json(&body))
        .await;
    assert_eq!((forged.status.as_u16(), forged.code()), (403, "csrf"));
    let wrong = stack
        .send(
            stack
                .http
                .post(stack.url("/api/users"))
                .header("cookie", &jar)
                .header("x-csrf-token", "guess")
                .json(&body),
        )
        .await;
    assert_eq!(wrong.status, 403);
    let made = stack
        .send(
            stack
                .http
                .post(stack.url("/api/users"))
                .header("cookie", &jar)
                .header("x-csrf-token", &csrf)
                .json(&body),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);

    let token = session.body["access_token"].as_str().unwrap();
    let query = stack.send(stack.http.get(stack.url(&format!("/api/users?t={token}")))).await;
    assert_eq!(
        (query.status.as_u16(), query.code()),
        (401, "unauthenticated"),
        "?t= is for streaming routes only"
    );
}

#[tokio::test]
async fn a_one_time_password_session_can_only_change_the_password() {
    let stack = Stack::start().await;
    let root = stack.token_of_new_super_admin().await;
    let created = stack
        .call(
            Method::POST,
            "/api/users",
            Some(&root),
            Some(json!({ "email": "fresh@example.com" })),
        )
        .await;
    assert_eq!(created.status, 201);
    let otp = created.body["one_time_password"].as_str().unwrap().to_owned();
    let session = stack.login("fresh@example.com", &otp).await;
    assert_eq!(session.body["must_change_password"], true);
    let token = session.body["access_token"].as_str().unwrap().to_owned();

    let refused = stack.call(Method::GET, "/api/audit", Some(&token), None).await;
    assert_eq!((refused.status.as_u16(), refused.code()), (403, "password_change_required"));
    assert_eq!(stack.call(Method::GET, "/api/auth/me", Some(&token), None).await.status, 200);
    let change = json!({ "current_password": otp, "new_password": "my own passphrase!" });
    let changed =
        stack.call(Method::POST, "/api/auth/password", Some(&token), Some(change.clone())).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(changed.body["must_change_password"], false);
    let fresh = changed.body["access_token"].as_str().unwrap();
    let me = stack.call(Method::GET, "/api/auth/me", Some(fresh), None).await;
    assert_eq!(me.body["user"]["must_change_password"], false);
    assert_eq!(stack.login("fresh@example.com", &otp).await.status, 401, "spent");
    assert_eq!(
        stack.call(Method::POST, "/api/auth/password", Some(fresh), Some(change)).await.status,
        401
    );
}

#[tokio::test]
async fn errors_have_one_shape_and_request_ids_travel() {
    let stack = Stack::start().await;
    let unknown = stack.call(Method::GET, "/api/nope", None, None).await;
    assert_eq!((unknown.status.as_u16(), unknown.code()), (404, "not_found"));
    assert!(unknown.body["error"]["message"].is_string());
    let wrong_method = stack.call(Method::DELETE, "/api/auth/login", None, None).await;
    assert_eq!(wrong_method.status, 405);
    let bad_body = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_eq!((bad_body.status.as_u16(), bad_body.code()), (400, "invalid_argument"));

    let mine = stack
        .send(stack.http.get(stack.url("/api/info")).header("x-request-id", "client-id-42"))
        .await;
    assert_eq!(mine.headers["x-request-id"], "client-id-42");
    let made = stack.send(stack.http.get(stack.url("/api/info"))).await;
    assert!(uuid::Uuid::parse_str(made.headers["x-request-id"].to_str().unwrap()).is_ok());

    // The id reaches auth: the audit entry of a call carries it.
    let root = stack.token_of_new_super_admin().await;
    let request = stack
        .http
        .post(stack.url("/api/users"))
        .bearer_auth(&root)
        .header("x-request-id", "trace-me-7")
        .json(&json!({ "email": "z@example.com" }));
    assert_eq!(stack.send(request).await.status, 201);
    let audit =
        stack.call(Method::GET, "/api/audit?action_prefix=user.create", Some(&root), None).await;
    assert_eq!(audit.body["items"][0]["request_id"], "trace-me-7", "{}", audit.body);
}

impl Stack {
    pub async fn token_of_new_super_admin(&self) -> String {
        self.user("root@example.com", true).await;
        self.token("root@example.com").await
    }
}
