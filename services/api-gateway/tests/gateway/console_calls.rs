//! The console's Calls and Usage pages over real HTTP: a member sees the group's calls and
//! charts drawn as SVG without inline style (the CSP allows none), filters apply, a refusal
//! of the API shows on the page, and someone outside the group is not told it exists.

use ramen_auth::calls::Origin;
use ramen_call_records::{CallBatch, Outcome};

use crate::calls::record;
use crate::console::{get, html, world};

#[tokio::test]
async fn calls_and_usage_pages_show_the_groups_calls_to_its_members_only() {
    let (stack, [ana, _ada, bo, _root]) = world().await;
    let mut failed = record(90_000, "alpha-prod", "notes.add", "k2", Outcome::ToolError);
    failed.arguments = Some(serde_json::json!({ "text": "hello from the test" }));
    let records = vec![
        record(120_000, "alpha-prod", "notes.add", "k1", Outcome::Ok),
        failed,
        record(30_000, "alpha-prod", "notes.list", "k1", Outcome::Ok),
    ];
    let origin = Origin { group: "alpha", zone: "z1", sequence: 1 };
    stack.auth.store_calls(origin, CallBatch { records, ..CallBatch::default() }).await.unwrap();

    let group = get(&stack, Some(&ana), "/groups/alpha").await;
    assert!(html(&group).contains(r#"href="/groups/alpha/calls""#), "the group links its calls");
    assert!(html(&group).contains(r#"href="/groups/alpha/usage""#), "and its usage");

    let calls = get(&stack, Some(&ana), "/groups/alpha/calls").await;
    assert_eq!(calls.status, 200, "{}", html(&calls));
    let page = html(&calls);
    assert_eq!(page.matches("data-call=").count(), 3, "{page}");
    assert!(page.contains(r#"data-status="tool_error""#) && page.contains("hello from the test"));
    assert!(page.contains(r#"<option value="alpha-prod">"#), "environments to filter by");
    assert!(
        calls.headers["content-security-policy"].to_str().unwrap().contains("style-src 'self'")
    );
    let filtered = get(&stack, Some(&ana), "/groups/alpha/calls?outcome=tool_error").await;
    assert_eq!(html(&filtered).matches("data-call=").count(), 1, "{}", html(&filtered));
    let none = get(&stack, Some(&ana), "/groups/alpha/calls?tool=nothing.here").await;
    assert!(html(&none).contains("No calls match."), "{}", html(&none));

    let usage = get(&stack, Some(&ana), "/groups/alpha/usage?environment=alpha-prod").await;
    assert_eq!(usage.status, 200, "{}", html(&usage));
    let page = html(&usage);
    for section in [
        "usage-summary",
        "usage-calls",
        "usage-latency",
        "usage-errors",
        "usage-targets",
        "usage-callers",
    ] {
        assert!(page.contains(&format!(r#"id="{section}""#)), "{section} is shown");
    }
    assert!(page.contains(r#"data-calls="3""#), "{page}");
    assert_eq!(page.matches("<svg").count(), 3 + 2, "three charts and a share bar per caller");
    assert!(!page.contains("style="), "no inline style: the CSP refuses it");
    let week = get(&stack, Some(&ana), "/groups/alpha/usage?window=week").await;
    assert!(html(&week).contains(r#"<option value="week" selected>"#), "{}", html(&week));
    let refused = get(&stack, Some(&ana), "/groups/alpha/usage?window=month").await;
    assert!(html(&refused).contains(r#"data-code="invalid_argument""#), "{}", html(&refused));
    let quiet = get(&stack, Some(&ana), "/groups/alpha/usage?environment=nowhere").await;
    assert!(html(&quiet).contains("No calls in this window."), "{}", html(&quiet));

    for path in ["/groups/alpha/calls", "/groups/alpha/usage"] {
        let hidden = get(&stack, Some(&bo), path).await;
        assert_eq!(hidden.status, 404, "{path}");
        assert!(!html(&hidden).contains("notes.add"), "{path}");
    }
}
