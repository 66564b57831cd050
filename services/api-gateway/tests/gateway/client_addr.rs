//! The REST API reads the client address by the rule the edge and the nodes share: behind a
//! trusted proxy, an `X-Forwarded-For` entry that is not an address where the client should
//! be is refused with a 400 naming it, not skipped (skipping would let the client's own words
//! become its address for rate limits and the audit log).

use reqwest::Method;
use serde_json::json;

use crate::support::{PASSWORD, Stack};

#[tokio::test]
async fn a_malformed_forwarded_client_is_a_400_naming_it() {
    let stack = Stack::start_behind_proxy().await;
    stack.user("ana@example.com", false).await;
    let login = |xff: &[&str]| {
        let mut request = stack
            .http
            .request(Method::POST, stack.url("/api/auth/login"))
            .json(&json!({ "email": "ana@example.com", "password": PASSWORD }));
        for line in xff {
            request = request.header("x-forwarded-for", *line);
        }
        request
    };
    for bad in ["unknown", "198.51.100.7:4000", "198.51.100.7, "] {
        let refused = stack.send(login(&[bad])).await;
        assert_eq!(refused.status, 400, "{bad:?}: {}", refused.body);
        let message = refused.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("X-Forwarded-For"), "{bad:?}: {message}");
    }
    // A bad entry the client wrote left of a good one is never read.
    assert_eq!(stack.send(login(&["unknown, 198.51.100.7"])).await.status, 200);
    assert_eq!(stack.send(login(&["unknown", "198.51.100.7"])).await.status, 200);
}
