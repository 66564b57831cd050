//! Public: what this server is, and its OpenAPI document.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::{Route, route};
use crate::access::Access;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::Public, routes!(info)), route(Access::Public, routes!(openapi_json))]
}

#[derive(Serialize, ToSchema)]
pub struct Info {
    pub name: String,
    pub version: String,
}

/// Server name and version.
#[utoipa::path(get, path = "/api/info", tag = "info", responses((status = 200, body = Info)))]
async fn info() -> Json<Info> {
    Json(Info { name: "ramen".into(), version: env!("CARGO_PKG_VERSION").into() })
}

/// This document (OpenAPI 3.1).
#[utoipa::path(get, path = "/api/openapi.json", tag = "info", responses((status = 200, description = "The OpenAPI document")))]
async fn openapi_json(State(gateway): State<Gateway>) -> Json<serde_json::Value> {
    Json(gateway.openapi().as_ref().clone())
}
