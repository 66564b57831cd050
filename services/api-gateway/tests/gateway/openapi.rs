//! The OpenAPI document served at /api/openapi.json is generated from the route table: every
//! route is in it with its access rule, and nothing else is.

use std::collections::HashSet;

use ramen_api_gateway::access::Access;
use ramen_api_gateway::routes::specs;
use reqwest::Method;

use crate::support::Stack;

#[tokio::test]
async fn every_route_of_the_table_is_in_the_served_document() {
    let stack = Stack::start().await;
    let answer = stack.call(Method::GET, "/api/openapi.json", None, None).await;
    assert_eq!(answer.status, 200);
    let doc = answer.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "OpenAPI 3.1: {}", doc["openapi"]);
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    let specs = specs();
    let mut ids = HashSet::new();
    for spec in &specs {
        let method = spec.method.as_str().to_ascii_lowercase();
        let operation = &doc["paths"][&spec.path][&method];
        assert!(operation.is_object(), "{} {} is not documented", spec.method, spec.path);
        assert_eq!(operation["operationId"], spec.operation_id.as_str());
        assert_eq!(operation["x-ramen-access"], spec.access.describe().as_str(), "{}", spec.path);
        let secured = operation["security"].as_array().is_some_and(|s| !s.is_empty());
        assert_eq!(
            secured,
            spec.access != Access::Public,
            "{} {} security",
            spec.method,
            spec.path
        );
        assert!(
            ids.insert(spec.operation_id.clone()),
            "operationId {} is not unique",
            spec.operation_id
        );
    }
    let documented: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().keys().filter(|k| k.as_str() != "parameters").count())
        .sum();
    assert_eq!(documented, specs.len(), "the document holds exactly the table's routes");
}

/// Request bodies carry the rules the services check with, taken from the same definitions
/// (`ramen_rules`), and every field the generator names is in the document.
#[tokio::test]
async fn bodies_state_the_rules_the_services_check() {
    let stack = Stack::start().await;
    let answer = stack.call(Method::GET, "/api/openapi.json", None, None).await;
    let mut doc = answer.body.clone();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["NewUserBody"]["properties"]["email"]["pattern"],
        ramen_service::rules::EMAIL.pattern
    );
    assert_eq!(
        schemas["NewGroupBody"]["properties"]["name"]["pattern"],
        ramen_service::validate::DNS_LABEL_PATTERN
    );
    assert_eq!(schemas["NewGroupBody"]["properties"]["repo_url"]["format"], "git-remote");
    assert_eq!(
        schemas["SettingsBody"]["properties"]["auto_rebalance_interval_seconds"]["maximum"],
        ramen_service::rules::REBALANCE_INTERVAL_SECONDS.1
    );
    let regions: Vec<_> = schemas["NewZoneBody"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|branch| branch["properties"]["region"]["pattern"].clone())
        .collect();
    assert_eq!(regions[1], ramen_service::rules::GCP_ZONE.pattern);
    assert_eq!(regions[2], ramen_service::rules::AWS_ZONE.pattern);
    assert_eq!(
        schemas["BoundsBody"]["properties"]["aws"]["properties"]["resources"]["items"]["pattern"],
        ramen_service::rules::AWS_RESOURCE_PATTERN.pattern
    );
    // No `u32` left reading as at most 2³¹−1.
    assert!(
        !doc.to_string().contains(r#""format":"int32","minimum":0}"#),
        "an unsigned int32 left"
    );
    // Applied again, the generator finds every field it names (a renamed one would be missing).
    let limits = ramen_api_gateway::contract::bodies::Limits { max_worker_count: 50 };
    assert_eq!(schemas["CountBody"]["properties"]["count"]["maximum"], 50, "zone.max_worker_count");
    let missing = ramen_api_gateway::contract::bodies::apply(&mut doc, limits);
    assert!(missing.is_empty(), "fields the body rules name and the document lacks: {missing:?}");
}

/// A route whose document declares no request body takes none: nothing or `{}` (what the
/// console sends to a bodiless POST) goes through, anything else is a 400 rather than ignored.
#[tokio::test]
async fn a_route_without_a_body_refuses_one() {
    let stack = Stack::start().await;
    stack.user("root@example.com", true).await;
    let token = stack.token("root@example.com").await;
    let nobody = "/api/users/01a24117-8b01-7197-a006-d2d56662286f";
    let refused =
        stack.call(Method::DELETE, nobody, Some(&token), Some(serde_json::json!({ "x": 1 }))).await;
    assert_eq!(
        (refused.status.as_u16(), refused.code()),
        (400, "invalid_argument"),
        "{}",
        refused.body
    );
    assert!(refused.body.to_string().contains("takes no request body"), "{}", refused.body);
    let listed =
        stack.call(Method::GET, "/api/groups", Some(&token), Some(serde_json::json!([1]))).await;
    assert_eq!(listed.status, 400, "a GET with a body: {}", listed.body);
    // `{}` and nothing reach the handler (deleting a user that is not there: 204).
    for body in [Some(serde_json::json!({})), None] {
        let answer = stack.call(Method::DELETE, nobody, Some(&token), body.clone()).await;
        assert_eq!(answer.status, 204, "{body:?}: {}", answer.body);
    }
}
