//! Access tokens end with their session: a logout voids the session's access token and a
//! password change voids every other session's, at once and on every replica (auth checks the
//! token's session in the store on the one call the gateway makes per request).

use std::net::SocketAddr;

use ramen_proto::auth::v1::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Answer, PASSWORD, Stack};

/// `GET path` on the gateway at `api` with `token`.
async fn get(stack: &Stack, api: SocketAddr, path: &str, token: &str) -> Answer {
    stack.send(stack.http.get(format!("http://{api}{path}")).bearer_auth(token)).await
}

fn tokens(session: &Value) -> (String, String) {
    let field = |name: &str| session[name].as_str().unwrap().to_owned();
    (field("access_token"), field("refresh_token"))
}

#[tokio::test]
async fn logout_and_password_change_void_access_tokens_on_every_replica() {
    let stack = Stack::start().await;
    stack.group("alpha").await;
    let ana = stack.user("ana@example.com", false).await;
    stack.member("alpha", &ana, Role::Member).await;
    let other = stack.replica().await;
    let routes = ["/api/auth/me", "/api/groups/alpha/members"];

    let (laptop, laptop_refresh) = tokens(&stack.login("ana@example.com", PASSWORD).await.body);
    let (phone, _) = tokens(&stack.login("ana@example.com", PASSWORD).await.body);
    let (tablet, _) = tokens(&stack.login("ana@example.com", PASSWORD).await.body);
    for path in routes {
        assert_eq!(get(&stack, other, path, &laptop).await.status, 200, "{path} before logout");
    }

    let out = stack
        .call(
            Method::POST,
            "/api/auth/logout",
            None,
            Some(json!({ "refresh_token": laptop_refresh })),
        )
        .await;
    assert_eq!(out.status, 204);
    for api in [stack.api, other] {
        for path in routes {
            let answer = get(&stack, api, path, &laptop).await;
            assert_eq!(
                (answer.status.as_u16(), answer.code()),
                (401, "unauthenticated"),
                "{path} on {api} after logout: {}",
                answer.body
            );
        }
    }
    // Only that session ended.
    assert_eq!(get(&stack, other, "/api/auth/me", &phone).await.status, 200);

    // A password change (through the other replica) ends every other session at once.
    let change = json!({ "current_password": PASSWORD, "new_password": "another long passphrase" });
    let changed = stack
        .send(
            stack
                .http
                .post(format!("http://{other}/api/auth/password"))
                .bearer_auth(&phone)
                .json(&change),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let (fresh, _) = tokens(&changed.body);
    for old in [&phone, &tablet] {
        for api in [stack.api, other] {
            let answer = get(&stack, api, "/api/groups/alpha/members", old).await;
            assert_eq!(answer.status, 401, "an old session's token on {api}: {}", answer.body);
        }
    }
    for api in [stack.api, other] {
        assert_eq!(get(&stack, api, "/api/auth/me", &fresh).await.status, 200, "the new session");
    }
}
