//! Login CSRF: a page on another origin can make a browser POST a `text/plain` form (or a
//! `no-cors` fetch) with any body, but cannot set `Content-Type: application/json`. The auth
//! routes that take a body refuse anything else, so such a page cannot sign the browser into
//! the attacker's account nor act on a session with a guessed body.

use reqwest::header::{CONTENT_TYPE, SET_COOKIE};
use serde_json::json;

use crate::support::{PASSWORD, Stack};

#[tokio::test]
async fn a_cross_site_text_plain_login_is_refused_and_sets_no_cookie() {
    let stack = Stack::start().await;
    stack.user("attacker@example.com", false).await;
    // What `<form enctype="text/plain">` sends: the JSON is smuggled in a field name.
    let body = json!({ "email": "attacker@example.com", "password": PASSWORD }).to_string();
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut request = stack.http.post(stack.url("/api/auth/login")).body(body.clone());
        if let Some(value) = content_type {
            request = request.header(CONTENT_TYPE, value);
        }
        let answer = stack.send(request).await;
        assert_eq!(
            (answer.status.as_u16(), answer.code()),
            (415, "unsupported_media_type"),
            "{content_type:?}: {}",
            answer.body
        );
        let message = answer.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("application/json"), "names the expected type: {message}");
        assert!(answer.headers.get(SET_COOKIE).is_none(), "{content_type:?}: no session cookie");
    }
    // The same body as JSON (with a charset, as some clients send it) signs in.
    let json = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/login"))
                .header(CONTENT_TYPE, "application/json; charset=utf-8")
                .body(body),
        )
        .await;
    assert_eq!(json.status, 200, "{}", json.body);
    assert!(json.headers.get(SET_COOKIE).is_some());
}

#[tokio::test]
async fn refresh_logout_and_password_bodies_must_be_json_too() {
    let stack = Stack::start().await;
    stack.user("ana@example.com", false).await;
    let session = stack.login("ana@example.com", PASSWORD).await.body;
    let refresh = session["refresh_token"].as_str().unwrap().to_owned();
    let access = session["access_token"].as_str().unwrap().to_owned();
    let plain = |path: &str, body: String| {
        stack.http.post(stack.url(path)).header(CONTENT_TYPE, "text/plain").body(body)
    };
    let token_body = json!({ "refresh_token": refresh }).to_string();
    for path in ["/api/auth/refresh", "/api/auth/logout"] {
        let answer = stack.send(plain(path, token_body.clone())).await;
        assert_eq!(
            (answer.status.as_u16(), answer.code()),
            (415, "unsupported_media_type"),
            "{path}"
        );
    }
    let change = json!({ "current_password": PASSWORD, "new_password": "another long passphrase" });
    let answer =
        stack.send(plain("/api/auth/password", change.to_string()).bearer_auth(&access)).await;
    assert_eq!((answer.status.as_u16(), answer.code()), (415, "unsupported_media_type"));
    // Declared JSON but not the document's body: refused, not a silent "signed out".
    for garbage in ["\u{1}\u{2}not json", r#"{"refresh_token": 7}"#, r#"{"token": "x"}"#] {
        let answer = stack
            .send(
                stack
                    .http
                    .post(stack.url("/api/auth/logout"))
                    .header(CONTENT_TYPE, "application/json")
                    .body(garbage),
            )
            .await;
        assert_eq!((answer.status.as_u16(), answer.code()), (400, "invalid_argument"), "{garbage}");
    }
    // The refused logouts left the session alive: the token still refreshes.
    let refreshed = stack
        .send(
            stack
                .http
                .post(stack.url("/api/auth/refresh"))
                .header(CONTENT_TYPE, "application/json")
                .body(token_body),
        )
        .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
}
