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
