//! Environment settings over REST with the real deployer behind the gateway.

use reqwest::Method;
use serde_json::json;

use crate::support::Stack;

#[tokio::test]
async fn record_arguments_is_off_unless_set_and_kept_unless_named() {
    let stack = Stack::start_full().await;
    stack.user("root@example.com", true).await;
    let root = stack.token("root@example.com").await;
    let call = async |method: Method, path: &str, body: Option<serde_json::Value>| {
        stack.call(method, path, Some(&root), body).await
    };
    let zone = json!({ "name": "z1", "provider": "local" });
    assert!(call(Method::POST, "/api/zones", Some(zone)).await.status.is_success());
    let group = json!({ "name": "a", "repo_url": "/nonexistent/repo", "default_ref": "main" });
    assert!(call(Method::POST, "/api/groups", Some(group)).await.status.is_success());

    let quiet = json!({ "name": "dev", "zones": ["z1"] });
    let dev = call(Method::POST, "/api/groups/a/environments", Some(quiet)).await;
    assert_eq!(
        (dev.status.as_u16(), &dev.body["record_arguments"]),
        (201, &json!(false)),
        "{}",
        dev.body
    );
    let loud = json!({ "name": "prod", "zones": ["z1"], "record_arguments": true });
    let prod = call(Method::POST, "/api/groups/a/environments", Some(loud)).await;
    assert_eq!(prod.body["record_arguments"], true, "{}", prod.body);

    let path = "/api/groups/a/environments/prod";
    let other = call(Method::PATCH, path, Some(json!({ "verbose": true }))).await;
    assert_eq!(
        (&other.body["verbose"], &other.body["record_arguments"]),
        (&json!(true), &json!(true))
    );
    let off = call(Method::PATCH, path, Some(json!({ "record_arguments": false }))).await;
    assert_eq!(off.body["record_arguments"], false, "{}", off.body);
    assert_eq!(call(Method::GET, path, None).await.body["record_arguments"], false);
    let listed = call(Method::GET, "/api/groups/a/environments", None).await;
    let flags: Vec<_> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["record_arguments"].clone())
        .collect();
    assert_eq!(flags, vec![json!(false), json!(false)], "{}", listed.body);
    let bad = call(Method::PATCH, path, Some(json!({ "record_arguments": "yes" }))).await;
    assert_eq!(bad.status, 400, "a word is not a bool: {}", bad.body);
}
