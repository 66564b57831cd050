//! A group admin's service-account rules stay inside the bounds a super admin sets, through
//! the REST API as the attacks were made: `PUT /api/groups/G/service-account` with
//! `*` on AWS or `roles/owner` on GCP answered 200 before the bounds.

use ramen_proto::auth::v1::Role;
use reqwest::Method;
use serde_json::json;

use crate::support::Stack;

#[tokio::test]
async fn a_group_admins_star_and_owner_are_refused_naming_the_bound_until_a_super_admin_widens_it()
{
    let stack = Stack::start().await;
    stack.group("team").await;
    let admin = stack.user("lead@team.dev", false).await;
    stack.member("team", &admin, Role::Admin).await;
    stack.user("root@ramen.dev", true).await;
    let (lead, root) = (stack.token("lead@team.dev").await, stack.token("root@ramen.dev").await);
    let put_rules = |rule: serde_json::Value| {
        let body = json!({ "rules": [rule] });
        stack.call(Method::PUT, "/api/groups/team/service-account", Some(&lead), Some(body))
    };

    let star = put_rules(json!({ "provider": "aws", "permissions": ["*"] })).await;
    assert_eq!(star.status, 403, "{}", star.body);
    let message = star.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("rule 1: permission \"*\" is outside the AWS bounds: no wildcards (aws.wildcards is false)"), "{message}");
    let owner = put_rules(json!({ "provider": "gcp", "permissions": ["roles/owner"], "resources": ["projects/_/buckets/b"] })).await;
    assert_eq!(owner.status, 403, "{}", owner.body);
    assert!(
        owner.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gcp.denied holds \"roles/owner\""),
        "{}",
        owner.body
    );
    let project =
        put_rules(json!({ "provider": "gcp", "permissions": ["roles/pubsub.publisher"] })).await;
    assert_eq!(project.status, 403, "{}", project.body);
    let scoped = put_rules(json!({ "provider": "aws", "permissions": ["s3:GetObject"], "resources": ["arn:aws:s3:::team-data/*"] })).await;
    assert_eq!(scoped.status, 200, "{}", scoped.body);

    // The bounds: readable by the group admin, set by the super admin only.
    let read = stack.call(Method::GET, "/api/service-account-bounds", Some(&lead), None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["version"], 0);
    assert_eq!(read.body["aws"]["wildcards"], false);
    assert!(read.body["gcp"]["denied"].as_array().unwrap().contains(&json!("roles/owner")));
    let mut body = json!({ "aws": read.body["aws"].clone(), "gcp": read.body["gcp"].clone() });
    body["gcp"]["unscoped"] = json!(true);
    let by_lead = stack
        .call(Method::PUT, "/api/service-account-bounds", Some(&lead), Some(body.clone()))
        .await;
    assert_eq!(by_lead.status, 403, "{}", by_lead.body);
    let by_root = stack
        .call(Method::PUT, "/api/service-account-bounds", Some(&root), Some(body.clone()))
        .await;
    assert_eq!(by_root.status, 200, "{}", by_root.body);
    assert_eq!(by_root.body["version"], 1);
    assert_eq!(
        put_rules(json!({ "provider": "gcp", "permissions": ["roles/pubsub.publisher"] }))
            .await
            .status,
        200
    );
    // Still no owner: project scope widened nothing else.
    assert_eq!(
        put_rules(json!({ "provider": "gcp", "permissions": ["roles/owner"] })).await.status,
        403
    );

    // Bad bounds are a 400 naming the field; an unknown field is refused, not ignored.
    let mut bad = body.clone();
    bad["aws"]["resources"] = json!(["arn:*"]);
    let refused =
        stack.call(Method::PUT, "/api/service-account-bounds", Some(&root), Some(bad)).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body["error"]["message"].as_str().unwrap().contains("aws.resources"),
        "{}",
        refused.body
    );
    let mut unknown = body;
    unknown["aws"]["allow_everything"] = json!(true);
    let refused =
        stack.call(Method::PUT, "/api/service-account-bounds", Some(&root), Some(unknown)).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
}
