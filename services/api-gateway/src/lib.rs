//! `api-gateway`: the REST API and console, token verification, rate limits, and the MCP edge.

use axum::Json;
use axum::routing::get;
use ramen_service::{Platform, Running};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let health = ramen_lifecycle::admin_router(platform.health.clone(), platform.metrics.clone());
    let router = axum::Router::new()
        .route(
            "/api/info",
            get(|| async {
                Json(json!({ "name": "ramen", "version": env!("CARGO_PKG_VERSION") }))
            }),
        )
        .merge(health);
    let (addr, handle) =
        ramen_lifecycle::serve_http(platform.config.listen.api, router, platform.shutdown.token())
            .await?;
    Ok(Running::new("api-gateway", addr, handle))
}
