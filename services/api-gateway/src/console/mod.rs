//! The web console: the pages ramen is run from, served by the gateway at `/`, the same origin
//! as `/api`.
//!
//! - Pages are rendered here (maud templates, escaped by default) from the REST API's own
//!   answers, read in process with the viewer's session cookie ([`api`]): every read passes the
//!   route table's access layer, so a member of one group never gets another group's data on a
//!   page, because the API never gives it to them.
//! - Everything that changes state is the browser calling the REST API itself
//!   (`assets/console.js`: `fetch` with the session cookie and `x-csrf-token`, the API's
//!   `{"error": …}` shown inline in the form). The console has no state-changing route of its
//!   own, so it adds no CSRF surface: the API's double-submit check covers every change.
//! - Live parts are the job log (`EventSource` on the API's job-events SSE route) and
//!   fragments re-fetched every few seconds (dashboard cells, teardown progress).
//! - Responses carry a tight Content-Security-Policy: scripts, styles and connections from
//!   this origin only, no inline script or style, no framing.

mod api;
mod assets;
mod audit;
mod chart;
mod config;
mod dashboard;
mod environments;
mod group;
mod groups;
mod layout;
mod model;
mod sign_in;
mod users;
mod viewer;
mod zones;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

pub use viewer::FRAGMENT_HEADER;

/// The console's state: the REST router it reads through.
#[derive(Clone)]
pub struct Console {
    api: api::Api,
}

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The console's pages and assets; `api` is the REST router (with its state) they read through.
pub fn router(api: Router) -> Router {
    let console = Console { api: api::Api::new(api) };
    Router::new()
        .route("/", get(|| async { Redirect::to("/dashboard") }))
        .route("/sign-in", get(sign_in::sign_in))
        .route("/password", get(sign_in::password))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/cells", get(dashboard::cells))
        .route("/zones", get(zones::page))
        .route("/groups", get(groups::page))
        .route("/groups/{group}", get(group::page))
        .route("/groups/{group}/jobs/{job}", get(group::jobs::page))
        .route("/groups/{group}/calls", get(group::calls::page))
        .route("/groups/{group}/usage", get(group::usage::page))
        .route("/groups/{group}/deletion", get(group::deletion::page))
        .route("/groups/{group}/deletion/progress", get(group::deletion::progress))
        .route("/environments", get(environments::page))
        .route("/config", get(config::page))
        .route("/audit", get(audit::page))
        .route("/users", get(users::page))
        .route("/assets/{name}", get(assets::serve))
        .with_state(console)
        .layer(axum::middleware::from_fn(secure_headers))
}

async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        // Pages show one user's data: never kept by a shared cache or the back button.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
