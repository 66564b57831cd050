//! The HTTP side: one entry handler that records the request, checks the bearer token and
//! injected faults, then routes by path (`routes.rs`) to the verbs (`verbs.rs`), watches
//! (`watch.rs`), subresources (`subresources.rs`) and discovery (`discovery.rs`).

mod discovery;
mod routes;
mod subresources;
mod verbs;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::errors::ApiError;
use crate::faults::{Faults, RecordedRequest};
use crate::logs::Logs;
use crate::store::Store;

/// Bodies above this are refused (the apiserver's limit is 3 MiB per object; lists of
/// objects sent by deletecollection are small).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// What the handlers share with the double's controls.
pub(crate) struct Shared {
    pub store: Arc<Store>,
    pub logs: Arc<Logs>,
    pub token: String,
    pub address: Mutex<String>,
    pub requests: Mutex<Vec<RecordedRequest>>,
    pub faults: Mutex<Faults>,
    /// Bumped to end every open watch (an apiserver restart, as the client sees it).
    pub watch_epoch: tokio::sync::watch::Sender<u64>,
    pub shutdown: CancellationToken,
}

/// A parsed request, as the verbs need it.
pub(crate) struct Call {
    pub method: http::Method,
    pub path: String,
    pub query: HashMap<String, String>,
    pub content_type: String,
    pub body: Bytes,
}

impl Call {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(entry).with_state(shared)
}

async fn entry(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(body) => body,
        Err(e) => return ApiError::bad_request(format!("reading the body: {e}")).into_response(),
    };
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let path = parts.uri.path().to_owned();
    let raw_query = parts.uri.query().unwrap_or_default().to_owned();
    shared.requests.lock().push(RecordedRequest {
        method: parts.method.to_string(),
        path: path.clone(),
        query: raw_query,
        content_type: (!content_type.is_empty()).then(|| content_type.clone()),
        body: body.to_vec(),
    });
    let expected = format!("Bearer {}", shared.token);
    let authorized = parts.headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok())
        == Some(expected.as_str());
    if !authorized {
        return ApiError::unauthorized().into_response();
    }
    if let Some(status) = shared.faults.lock().take(parts.method.as_str(), &path) {
        return ApiError::injected(status).into_response();
    }
    let query = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let call = Call { method: parts.method, path, query, content_type, body };
    match routes::dispatch(&shared, call).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

/// A JSON answer with a status code.
pub(crate) fn json(code: u16, value: &serde_json::Value) -> Response {
    let status = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    let body = serde_json::to_vec(value).unwrap_or_default();
    (status, [(http::header::CONTENT_TYPE, "application/json")], Body::from(body)).into_response()
}
