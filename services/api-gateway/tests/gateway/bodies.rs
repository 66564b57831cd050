//! Bodies a hostile client sends to exhaust a JSON parser, against the REST API: each is a
//! 400 in the API's error shape that names the problem (never quoting the body, which may
//! hold a password), and the API goes on serving.

use reqwest::header::CONTENT_TYPE;

use crate::support::{PASSWORD, Stack};

#[tokio::test]
async fn deeply_nested_and_invalid_utf8_bodies_are_clear_400s() {
    let stack = Stack::start().await;
    stack.user("ana@example.com", false).await;

    let login = |password_value: &str| {
        format!(r#"{{"email":"ana@example.com","password":{password_value}}}"#)
    };
    let arrays = "[".repeat(100_000) + &"]".repeat(100_000);
    let objects = r#"{"a":"#.repeat(100_000) + "1" + &"}".repeat(100_000);
    let mut bad_utf8 = br#"{"email":"ana@example.com","password":"secret-"#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
    bad_utf8.extend_from_slice(br#""}"#);
    let cases: [(&str, Vec<u8>); 4] = [
        ("100,000 nested arrays", login(&arrays).into_bytes()),
        ("100,000 nested objects", login(&objects).into_bytes()),
        ("a body that is only nesting", arrays.clone().into_bytes()),
        ("invalid UTF-8 in a string", bad_utf8),
    ];
    for (what, body) in cases {
        let answer = stack
            .send(
                stack
                    .http
                    .post(stack.url("/api/auth/login"))
                    .header(CONTENT_TYPE, "application/json")
                    .body(body),
            )
            .await;
        assert_eq!((answer.status.as_u16(), answer.code()), (400, "invalid_argument"), "{what}");
        let message = answer.body["error"]["message"].as_str().unwrap_or_default();
        // What is wrong and where, in serde's words or ours ("a field has the wrong type").
        assert!(
            message.starts_with("request body: ") && message.contains(" at line 1 column "),
            "{what}: the refusal says what and where: {message}"
        );
        assert!(!message.contains("secret-") && message.len() < 200, "{what}: {message}");
    }

    let session = stack.login("ana@example.com", PASSWORD).await;
    assert_eq!(session.status, 200, "the API still serves: {}", session.body);
}
