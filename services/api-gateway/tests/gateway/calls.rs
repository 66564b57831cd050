//! Call records and usage over REST: records written through auth's store (as its bus consumer
//! would), read back by a member with every filter, paged, summed up per window; bad
//! parameters refused by name; a non-member not told the group exists.

use ramen_auth::calls::Origin;
use ramen_call_records::{CallBatch, CallRecord, Outcome};
use ramen_proto::auth::v1::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::Stack;

pub fn record(
    ago_ms: i64,
    environment: &str,
    target: &str,
    caller: &str,
    outcome: Outcome,
) -> CallRecord {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    CallRecord {
        at_ms: now.as_millis() as i64 - ago_ms,
        group: "alpha".into(),
        environment: environment.into(),
        zone: "z1".into(),
        worker: "w-1".into(),
        caller_id: caller.into(),
        caller_name: format!("{caller}-name"),
        method: "tools/call".into(),
        target: target.into(),
        duration_us: 1000,
        outcome,
        error_code: 0,
        request_bytes: 10,
        response_bytes: 20,
        arguments: None,
    }
}

/// Four calls of `alpha` (three in prod, one in dev) and one of `beta`.
async fn store_calls(stack: &Stack) {
    let mut failed = record(120_000, "prod", "notes.add", "k2", Outcome::ToolError);
    failed.arguments = Some(json!({ "text": "hi", "token": "[redacted]" }));
    let alpha = CallBatch {
        records: vec![
            record(180_000, "prod", "notes.add", "k1", Outcome::Ok),
            failed,
            record(60_000, "prod", "notes.list", "k1", Outcome::Ok),
            record(30_000, "dev", "notes.add", "k1", Outcome::Ok),
        ],
        ..CallBatch::default()
    };
    let origin = Origin { group: "alpha", zone: "z1", sequence: 1 };
    assert_eq!(stack.auth.store_calls(origin, alpha).await.unwrap(), 0);
    let mut other = record(10_000, "prod", "notes.add", "k9", Outcome::Ok);
    other.group = "beta".into();
    let origin = Origin { group: "beta", zone: "z1", sequence: 2 };
    stack
        .auth
        .store_calls(origin, CallBatch { records: vec![other], ..CallBatch::default() })
        .await
        .unwrap();
}

fn targets(body: &Value) -> Vec<(String, String)> {
    let calls = body["items"].as_array().expect("a page of calls");
    calls
        .iter()
        .map(|c| (c["environment"].as_str().unwrap().into(), c["target"].as_str().unwrap().into()))
        .collect()
}

#[tokio::test]
async fn members_read_their_groups_calls_filtered_paged_and_summed_up() {
    let stack = Stack::start().await;
    stack.group("alpha").await;
    stack.group("beta").await;
    let member = stack.user("member@alpha.dev", false).await;
    stack.member("alpha", &member, Role::Member).await;
    stack.user("outsider@example.com", false).await;
    store_calls(&stack).await;
    let token = stack.token("member@alpha.dev").await;
    let get = |path: String| {
        let token = token.clone();
        let stack = &stack;
        async move { stack.call(Method::GET, &path, Some(&token), None).await }
    };

    let all = get("/api/groups/alpha/calls".into()).await;
    assert_eq!(all.status, 200, "{}", all.body);
    let newest_first = [
        ("dev", "notes.add"),
        ("prod", "notes.list"),
        ("prod", "notes.add"),
        ("prod", "notes.add"),
    ];
    let expected: Vec<(String, String)> =
        newest_first.iter().map(|(e, t)| ((*e).into(), (*t).into())).collect();
    assert_eq!(targets(&all.body), expected, "beta's call is not alpha's");
    assert_eq!(all.body["next_page_token"], "");
    let failed = &all.body["items"][2];
    assert_eq!(
        (&failed["outcome"], &failed["caller_id"], &failed["caller_name"], &failed["zone"]),
        (&json!("tool_error"), &json!("k2"), &json!("k2-name"), &json!("z1"))
    );
    assert_eq!(failed["arguments"], json!({ "text": "hi", "token": "[redacted]" }));
    assert!(all.body["items"][0].get("arguments").is_none(), "absent, not null: {}", all.body);
    assert_eq!((&failed["duration_us"], &failed["request_bytes"]), (&json!(1000), &json!(10)));
    assert!(failed["at"].as_str().unwrap().ends_with('Z'), "RFC 3339: {}", failed["at"]);

    let count = |body: &Value| body["items"].as_array().map_or(0, Vec::len);
    for (query, calls) in [
        ("environment=prod", 3),
        ("tool=notes.add", 3),
        ("caller=k2", 1),
        ("outcome=tool_error", 1),
        ("outcome=ok&environment=prod", 2),
        ("tool=nothing.here", 0),
    ] {
        let answer = get(format!("/api/groups/alpha/calls?{query}")).await;
        assert_eq!(
            (answer.status.as_u16(), count(&answer.body)),
            (200, calls),
            "{query}: {}",
            answer.body
        );
    }
    // `since` is inclusive and `until` exclusive: the third newest's time keeps it and the two
    // after it; the newest's time keeps the three before it.
    let at = |i: usize| all.body["items"][i]["at"].as_str().unwrap().replace('+', "%2B");
    let since = get(format!("/api/groups/alpha/calls?since={}", at(2))).await;
    assert_eq!(count(&since.body), 3, "{}", since.body);
    let until = get(format!("/api/groups/alpha/calls?until={}", at(0))).await;
    assert_eq!(count(&until.body), 3, "{}", until.body);

    // Two pages of two, the same calls as one page, none twice.
    let first = get("/api/groups/alpha/calls?page_size=2".into()).await;
    let next = first.body["next_page_token"].as_str().unwrap().to_owned();
    assert_eq!(count(&first.body), 2);
    assert!(!next.is_empty(), "{}", first.body);
    let second = get(format!("/api/groups/alpha/calls?page_size=2&page_token={next}")).await;
    assert_eq!(second.body["next_page_token"], "", "{}", second.body);
    let ids = |body: &Value| -> Vec<Value> {
        body["items"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect()
    };
    let paged: Vec<Value> = [ids(&first.body), ids(&second.body)].concat();
    assert_eq!(paged, ids(&all.body));

    let usage = get("/api/groups/alpha/usage".into()).await;
    assert_eq!(usage.status, 200, "{}", usage.body);
    let body = &usage.body;
    assert_eq!((&body["window"], &body["bucket_seconds"]), (&json!("hour"), &json!(60)));
    assert_eq!(body["buckets"].as_array().unwrap().len(), 60);
    assert_eq!((&body["total"]["calls"], &body["total"]["errors"]), (&json!(4), &json!(1)));
    let bucketed: u64 = body["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["figures"]["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(bucketed, 4);
    assert_eq!(
        (&body["targets"][0]["target"], &body["targets"][0]["figures"]["calls"]),
        (&json!("notes.add"), &json!(3))
    );
    assert_eq!(body["targets"][0]["calls_per_bucket"].as_array().unwrap().len(), 60);
    assert_eq!(
        (&body["callers"][0]["caller_name"], &body["callers"][0]["figures"]["calls"]),
        (&json!("k1-name"), &json!(3))
    );
    assert_eq!(body["truncated"], false);
    assert!(body["since"].as_str().is_some() && body["until"].as_str().is_some(), "{body}");
    let prod = get("/api/groups/alpha/usage?environment=prod&window=day".into()).await;
    assert_eq!(
        (&prod.body["total"]["calls"], &prod.body["bucket_seconds"]),
        (&json!(3), &json!(1800))
    );
    assert_eq!(prod.body["buckets"].as_array().unwrap().len(), 48);
    let week = get("/api/groups/alpha/usage?window=week".into()).await;
    assert_eq!(week.body["buckets"].as_array().unwrap().len(), 28, "{}", week.body);

    // A wrong parameter is a 400 that names it.
    for (path, named) in [
        ("/api/groups/alpha/calls?outcome=fine", "outcome"),
        ("/api/groups/alpha/calls?outcome=OK", "outcome"),
        ("/api/groups/alpha/calls?since=yesterday", "since"),
        ("/api/groups/alpha/calls?until=2026-13-01", "until"),
        ("/api/groups/alpha/calls?environment=Not_A_Label", "environment"),
        ("/api/groups/alpha/calls?page_size=5000", "page_size"),
        ("/api/groups/alpha/usage?window=month", "window"),
        ("/api/groups/alpha/usage?environment=a.b", "environment"),
    ] {
        let answer = get(path.into()).await;
        let message = answer.body["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert_eq!(answer.status, 400, "{path}: {}", answer.body);
        assert!(message.starts_with(named), "{path}: {message}");
    }

    // Someone outside the group is not told it exists, for calls or usage.
    let outsider = stack.token("outsider@example.com").await;
    for path in ["/api/groups/alpha/calls", "/api/groups/alpha/usage"] {
        let answer = stack.call(Method::GET, path, Some(&outsider), None).await;
        assert_eq!(
            (answer.status.as_u16(), answer.code()),
            (404, "not_found"),
            "{path}: {}",
            answer.body
        );
    }
}
