//! Membership answers do not tell a group admin which emails have a ramen account: adding one
//! without an account answers as adding one with, and the membership takes effect when the
//! account is created.

use ramen_proto::auth::v1::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::Stack;

/// Each field's JSON type (and a string's length class), which is all a shape comparison keeps.
fn shape(value: &Value) -> Vec<(String, String)> {
    let object = value.as_object().expect("an object");
    let mut fields: Vec<(String, String)> = object
        .iter()
        .map(|(key, value)| {
            let kind = match value {
                Value::String(s) if key == "user_id" => format!("string of {}", s.len()),
                Value::String(s) if s.is_empty() => "empty string".into(),
                Value::String(_) => "string".into(),
                other => format!("{other:?}").split('(').next().unwrap_or_default().to_owned(),
            };
            (key.clone(), kind)
        })
        .collect();
    fields.sort();
    fields
}

#[tokio::test]
async fn adding_an_email_answers_the_same_whether_or_not_it_has_an_account() {
    let stack = Stack::start().await;
    stack.group("alpha").await;
    let admin = stack.user("admin@alpha.dev", false).await;
    stack.member("alpha", &admin, Role::Admin).await;
    stack.user("known@example.com", false).await;
    let token = stack.token("admin@alpha.dev").await;
    let add = |email: &str| {
        let body = json!({ "email": email, "role": "member" });
        stack.call(Method::POST, "/api/groups/alpha/members", Some(&token), Some(body))
    };

    let known = add("known@example.com").await;
    let unknown = add("Nobody-Yet@Example.com").await;
    assert_eq!(known.status, unknown.status, "{} / {}", known.body, unknown.body);
    assert_eq!(known.status, 200, "{}", known.body);
    assert_eq!(shape(&known.body), shape(&unknown.body), "{} / {}", known.body, unknown.body);
    assert_eq!(unknown.body["email"], "nobody-yet@example.com");
    assert_eq!(unknown.body["role"], "member");
    // Adding again (a role change) answers alike too, with the same id.
    let again = stack
        .call(
            Method::POST,
            "/api/groups/alpha/members",
            Some(&token),
            Some(json!({ "email": "nobody-yet@example.com", "role": "admin" })),
        )
        .await;
    assert_eq!((again.status.as_u16(), &again.body["user_id"]), (200, &unknown.body["user_id"]));

    // The list shows both the same way.
    let listed = stack.call(Method::GET, "/api/groups/alpha/members", Some(&token), None).await;
    let items = listed.body["items"].as_array().unwrap();
    let find = |email: &str| items.iter().find(|m| m["email"] == email).cloned().unwrap();
    let (a, b) = (find("known@example.com"), find("nobody-yet@example.com"));
    assert_eq!(shape(&a), shape(&b), "{a} / {b}");
    assert_eq!(b["user_id"], unknown.body["user_id"]);

    // The account created later is a member from its first sign-in.
    stack.user("nobody-yet@example.com", false).await;
    let newcomer = stack.token("nobody-yet@example.com").await;
    let me = stack.call(Method::GET, "/api/auth/me", Some(&newcomer), None).await;
    assert_eq!(me.body["user"]["id"], unknown.body["user_id"], "{}", me.body);
    let memberships = me.body["memberships"].as_array().unwrap();
    assert!(
        memberships.iter().any(|m| m["group"] == "alpha" && m["role"] == "admin"),
        "{}",
        me.body
    );
    let read = stack.call(Method::GET, "/api/groups/alpha/members", Some(&newcomer), None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    // Removing works the same for both.
    for member in [&a, &b] {
        let path = format!("/api/groups/alpha/members/{}", member["user_id"].as_str().unwrap());
        assert_eq!(stack.call(Method::DELETE, &path, Some(&token), None).await.status, 204);
    }
}
