//! The console reads through the REST API itself, in process: every page's data is a `GET`
//! to the route table's router with the page request's own session cookie, so each read
//! passes the route's access layer (token, `Authorize`) exactly as the browser's own call
//! would. Nothing here decides who may see what; a refusal comes back as the API's error
//! body and the page shows it.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Request, StatusCode, header};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tower::ServiceExt;

use crate::request_id::RequestId;

/// Answers larger than this are not read (a page of 1000 packages with schemas fits).
const MAX_ANSWER: usize = 16 << 20;

/// The REST router (already holding the gateway state), called in process.
#[derive(Clone)]
pub struct Api(Router);

impl Api {
    pub fn new(router: Router) -> Self {
        Self(router)
    }

    /// `GET path` as the page request's user, decoded as `T`.
    pub async fn get<T: DeserializeOwned>(
        &self,
        ctx: &Ctx,
        path: impl AsRef<str>,
    ) -> Result<T, Failure> {
        let path = path.as_ref();
        let mut request = Request::get(path)
            .header(header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| Failure::internal(e.to_string()))?;
        if let Some(cookie) = &ctx.cookie {
            request.headers_mut().insert(header::COOKIE, cookie.clone());
        }
        request.extensions_mut().insert(RequestId(ctx.request_id.clone()));
        if let Some(peer) = ctx.peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let response = self.0.clone().oneshot(request).await.map_err(|e| match e {})?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER)
            .await
            .map_err(|e| Failure::internal(format!("reading {path}: {e}")))?;
        if !status.is_success() {
            let body: ErrorBody = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(Failure { status, code: body.error.code, message: body.error.message });
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| Failure::internal(format!("the answer of {path} did not decode: {e}")))
    }
}

/// What an in-process call carries over from the page request.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    pub cookie: Option<HeaderValue>,
    pub request_id: String,
    pub peer: Option<SocketAddr>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Ctx {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_parts(parts))
    }
}

impl Ctx {
    pub fn from_parts(parts: &Parts) -> Self {
        Self {
            cookie: joined_cookies(&parts.headers),
            request_id: parts
                .extensions
                .get::<RequestId>()
                .map(|r| r.0.clone())
                .unwrap_or_default(),
            peer: parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0),
        }
    }
}

/// Every `Cookie` header as one (HTTP/2 clients may send several).
fn joined_cookies(headers: &axum::http::HeaderMap) -> Option<HeaderValue> {
    let all: Vec<&str> =
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).collect();
    if all.is_empty() {
        return None;
    }
    HeaderValue::from_str(&all.join("; ")).ok()
}

/// A refused or failed read, in the API's words.
#[derive(Clone, Debug)]
pub struct Failure {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

impl Failure {
    pub fn internal(message: String) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, code: "internal".into(), message }
    }
}

#[derive(Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: ErrorDetail,
}

#[derive(Default, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// `s` for a URL path segment or query value.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
