//! The console's stylesheet, script and icon, compiled into the binary (no build step, no
//! third-party code). URLs carry a hash of the content, so browsers cache them for good and a
//! new binary's assets are fetched at once.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "console.css",
        mime: "text/css; charset=utf-8",
        body: include_str!("assets/console.css"),
    },
    Asset {
        name: "console.js",
        mime: "text/javascript; charset=utf-8",
        body: include_str!("assets/console.js"),
    },
    Asset { name: "icon.svg", mime: "image/svg+xml", body: include_str!("assets/icon.svg") },
];

fn versions() -> &'static [String] {
    static VERSIONS: OnceLock<Vec<String>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        ASSETS.iter().map(|a| hex::encode(&Sha256::digest(a.body.as_bytes())[..6])).collect()
    })
}

/// `/assets/<name>?v=<hash>`.
pub fn url(name: &str) -> String {
    let version = ASSETS.iter().position(|a| a.name == name).map(|i| versions()[i].as_str());
    format!("/assets/{name}?v={}", version.unwrap_or_default())
}

pub async fn serve(Path(name): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut response = asset.body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.mime));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    response
}
