//! MCP streamable HTTP on one endpoint, for both eras, decided per request: a request
//! carrying the 2026-07-28 envelope (`_meta` protocol version, or that revision's
//! `MCP-Protocol-Version`) is served statelessly by `modern`; everything else is the
//! session-based revision 2025-11-25 (2025-06-18 and 2025-03-26 clients accepted) — POST
//! (client messages), GET (the session's server-to-client stream) and DELETE (end the
//! session).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use tokio_stream::wrappers::BroadcastStream;

use super::calls::{Accepts, Reply};
use super::jsonrpc::{self, INVALID_REQUEST, Incoming, PARSE_ERROR, ParseError};
use super::methods;
use super::modern;
use super::modern::envelope::PROTOCOL_VERSION;
use super::session::{LATEST_VERSION, SUPPORTED_VERSIONS, Session};
use crate::node::Node;
use crate::policy::{CallerId, Unauthenticated};

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const VERSION_HEADER: &str = "mcp-protocol-version";
// Made once: a lookup by `&str` parses the name first (~300 instructions).
const SESSION: HeaderName = HeaderName::from_static(SESSION_HEADER);
const KEEPALIVE: Duration = Duration::from_secs(15);

pub fn router(node: Arc<Node>, path: &str) -> Router {
    Router::new()
        .route(path, post(post_mcp).get(get_mcp).delete(delete_mcp))
        .layer(axum::middleware::map_response_with_state(node.clone(), close_while_draining))
        .with_state(node)
}

/// The MCP endpoint's POST, GET and DELETE, answered ahead of axum's routing (see
/// [`ramen_lifecycle::FastRoute`]). [`router`] serves the same path behind it, for every
/// request this declines (HEAD, other methods, a request with no peer address), so the
/// endpoint answers as it would through the router alone.
pub struct McpRoute {
    node: Arc<Node>,
    path: Box<str>,
}

impl McpRoute {
    pub fn new(node: Arc<Node>, path: &str) -> Self {
        Self { node, path: path.into() }
    }
}

impl ramen_lifecycle::FastRoute for McpRoute {
    fn route(
        &self,
        request: axum::extract::Request,
    ) -> Result<ramen_lifecycle::Answer, axum::extract::Request> {
        if request.uri().path() != &*self.path {
            return Err(request);
        }
        let Some(&ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else {
            return Err(request);
        };
        let method = request.method().clone();
        if !matches!(method, Method::POST | Method::GET | Method::DELETE) {
            return Err(request);
        }
        let node = self.node.clone();
        Ok(Box::pin(async move {
            let response = match method {
                Method::POST => serve_post(node.clone(), peer, request).await,
                Method::GET => serve_get(node.clone(), peer, request.into_parts().0.headers).await,
                _ => serve_delete(node.clone(), peer, request.into_parts().0.headers).await,
            };
            closing_while_draining(&node, response)
        }))
    }
}

async fn close_while_draining(State(node): State<Arc<Node>>, response: Response) -> Response {
    closing_while_draining(&node, response)
}

/// While draining, every answer asks the client to close its connection. A client (the edge)
/// then opens a fresh one for its next request, which a stopped listener refuses outright (safe
/// to send to another worker), instead of reusing an idle keep-alive connection that the node
/// closes just as the request arrives: that request would be lost with no way to tell it never
/// ran.
fn closing_while_draining(node: &Node, mut response: Response) -> Response {
    if node.is_draining() {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body)
        .into_response()
}

fn http_error(status: StatusCode, code: i64, message: &str) -> Response {
    json_response(status, jsonrpc::error(None, code, message, None))
}

/// Origin, source address and who is calling (an MCP key or an OAuth access token) — checked
/// before anything is read or looked up, so a refused caller learns nothing about sessions or
/// keys. The token itself goes no further than this: the caller's claims do.
async fn admit(node: &Node, headers: &HeaderMap, peer: SocketAddr) -> Result<CallerId, Response> {
    let policy = node.policy();
    let header_str = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if !policy.origin_ok(header_str(header::ORIGIN), header_str(header::HOST)) {
        return Err(http_error(StatusCode::FORBIDDEN, INVALID_REQUEST, "origin not allowed"));
    }
    let client = policy
        .client_ip(peer.ip(), headers)
        .map_err(|e| http_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, &e.to_string()))?;
    if !policy.ip_ok(client) {
        return Err(http_error(
            StatusCode::FORBIDDEN,
            INVALID_REQUEST,
            &format!("source address {client} is not allowed"),
        ));
    }
    match policy.authenticate(header_str(header::AUTHORIZATION)).await {
        Ok(caller) => Ok(caller),
        Err(refusal) => Err(unauthenticated(&policy, &refusal)),
    }
}

/// 401 (or 403 for a token without the scope) with the challenge that says what to present.
fn unauthenticated(policy: &crate::policy::Policy, refusal: &Unauthenticated) -> Response {
    let (status, message) = match refusal {
        Unauthenticated::Key => (
            StatusCode::UNAUTHORIZED,
            "a valid MCP key is required (Authorization: Bearer <key>)".to_owned(),
        ),
        Unauthenticated::Token(rejection) => {
            if let ramen_oauth_resource::Rejection::Invalid(why) = rejection {
                tracing::debug!(%why, "access token refused");
            }
            let status =
                StatusCode::from_u16(rejection.status()).unwrap_or(StatusCode::UNAUTHORIZED);
            let message = match rejection {
                ramen_oauth_resource::Rejection::InsufficientScope(_) => {
                    "the access token lacks the scope this environment requires"
                }
                _ if policy.auth_mode().keys() => {
                    "a valid MCP key or OAuth access token for this environment is required"
                }
                _ => "a valid OAuth access token for this environment is required",
            };
            (status, message.to_owned())
        }
    };
    let mut response = http_error(status, INVALID_REQUEST, &message);
    if let Ok(value) = HeaderValue::from_str(&policy.challenge(refusal)) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// A session-era request with an `MCP-Protocol-Version` this node does not speak: 400.
fn legacy_version_refused(headers: &HeaderMap) -> Option<Response> {
    let version = headers.get(&PROTOCOL_VERSION).and_then(|v| v.to_str().ok())?;
    if SUPPORTED_VERSIONS.contains(&version) {
        return None;
    }
    if modern::envelope::MODERN_VERSIONS.contains(&version) {
        let message = format!(
            "MCP-Protocol-Version {version:?} requests carry params._meta[{:?}] and no initialize",
            modern::envelope::PROTOCOL_VERSION_KEY
        );
        return Some(http_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, &message));
    }
    let message = format!(
        "unsupported MCP-Protocol-Version {version:?}; supported: {}, {}",
        modern::envelope::MODERN_VERSIONS.join(", "),
        SUPPORTED_VERSIONS.join(", ")
    );
    Some(http_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, &message))
}

/// Whether a GET/DELETE comes from a 2026-07-28 client, which has no session to stream or end.
fn modern_header(headers: &HeaderMap) -> bool {
    headers
        .get(&PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| modern::envelope::MODERN_VERSIONS.contains(&v))
}

fn method_not_allowed() -> Response {
    let mut response = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        INVALID_REQUEST,
        "MCP 2026-07-28 has no GET stream or session to delete: POST requests (subscriptions/listen for changes)",
    );
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// The session named by `Mcp-Session-Id`: 400 when absent, 404 when unknown, ended, or
/// opened by another caller (a session is bound to who opened it: a leaked session id is
/// worth nothing to anyone else).
fn session(node: &Node, headers: &HeaderMap, caller: &CallerId) -> Result<Arc<Session>, Response> {
    let Some(id) = headers.get(&SESSION).and_then(|v| v.to_str().ok()) else {
        return Err(http_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Mcp-Session-Id header is required; send initialize first",
        ));
    };
    node.sessions.get(id).filter(|s| caller.owns(&s.owner)).ok_or_else(|| {
        http_error(
            StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            "session not found or ended; initialize a new one",
        )
    })
}

/// What the client's `Accept` allows, read as RFC 9110 §12.5.1 says: every `Accept` line, each
/// media range's type compared without regard to case, and for each of the two types the most
/// specific range that matches it deciding (`text/event-stream;q=0` refuses a stream that
/// `*/*` would allow). No readable `Accept` at all means JSON only, as before streams existed.
fn accepts(headers: &HeaderMap) -> Accepts {
    // What the official SDKs' clients send, recognised without parsing (~900 instructions).
    const BOTH: &[u8] = b"application/json, text/event-stream";
    let lines = headers.get_all(header::ACCEPT);
    let mut first_two = lines.iter();
    if let (Some(line), None) = (first_two.next(), first_two.next())
        && line.as_bytes() == BOTH
    {
        return Accepts { json: true, sse: true };
    }
    let mut json = Preference::default();
    let mut sse = Preference::default();
    let mut any_line = false;
    for line in &lines {
        let Ok(line) = line.to_str() else { continue };
        any_line = true;
        for range in line.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let Some((kind, subtype)) = media.split_once('/') else { continue };
            let q = parts.find_map(quality).unwrap_or(true);
            let wild = |s: &str| s == "*";
            let specificity = |ty: &str, sub: &str| {
                if kind.eq_ignore_ascii_case(ty) && subtype.eq_ignore_ascii_case(sub) {
                    Some(2)
                } else if kind.eq_ignore_ascii_case(ty) && wild(subtype) {
                    Some(1)
                } else if wild(kind) && wild(subtype) {
                    Some(0)
                } else {
                    None
                }
            };
            if let Some(level) = specificity("application", "json") {
                json.offer(level, q);
            }
            if let Some(level) = specificity("text", "event-stream") {
                sse.offer(level, q);
            }
        }
    }
    if !any_line {
        return Accepts { json: true, sse: false };
    }
    Accepts { json: json.accepted(), sse: sse.accepted() }
}

/// Whether `Content-Type` names JSON: its media type, parameters (`charset`) aside, compared
/// without regard to case (`application/jsonl` is not JSON).
fn is_json_body(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let media = v.split(';').next().unwrap_or("").trim();
        media.eq_ignore_ascii_case("application/json")
    })
}

/// The most specific media range seen so far for one type, and whether it allows it.
#[derive(Default)]
struct Preference {
    best: Option<(u8, bool)>,
}

impl Preference {
    fn offer(&mut self, specificity: u8, allowed: bool) {
        match self.best {
            Some((best, _)) if best > specificity => {}
            // Of equally specific ranges, any that allows the type allows it.
            Some((best, was)) if best == specificity => self.best = Some((best, was || allowed)),
            _ => self.best = Some((specificity, allowed)),
        }
    }

    fn accepted(&self) -> bool {
        self.best.is_some_and(|(_, allowed)| allowed)
    }
}

/// A media range's parameter, if it is `q`: whether its weight is above zero. A weight that
/// does not parse does not refuse the type.
fn quality(param: &str) -> Option<bool> {
    let (name, value) = param.split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("q") {
        return None;
    }
    Some(value.trim().parse::<f32>().map_or(true, |q| q > 0.0))
}

async fn post_mcp(
    State(node): State<Arc<Node>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: axum::extract::Request,
) -> Response {
    serve_post(node, peer, request).await
}

async fn serve_post(
    node: Arc<Node>,
    peer: SocketAddr,
    request: axum::extract::Request,
) -> Response {
    // The request whole, not the `HeaderMap` extractor: that one clones the map (~1k
    // instructions a call, e2e/run-cost-gate); this moves it.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let limit = node.settings.max_body_bytes;
    let caller = match admit(&node, &headers, peer).await {
        Ok(caller) => caller,
        Err(refused) => return refuse_unread(body, limit, refused).await,
    };
    let accepts = accepts(&headers);
    if !accepts.json && !accepts.sse {
        let refused = http_error(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "Accept must include application/json and text/event-stream",
        );
        return refuse_unread(body, limit, refused).await;
    }
    if !is_json_body(&headers) {
        let refused = http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Content-Type must be application/json",
        );
        return refuse_unread(body, limit, refused).await;
    }
    let bytes = match ramen_lifecycle::read_body(body, limit).await {
        Ok(bytes) => bytes,
        Err(refused) => return http_error(refused.status, INVALID_REQUEST, &refused.message),
    };
    let message = match jsonrpc::parse(&bytes) {
        Ok(message) => message,
        Err(ParseError::Json(reason)) => {
            return http_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("parse error: {reason}"),
            );
        }
        Err(ParseError::Invalid { reason, id }) => {
            let body = jsonrpc::error(
                id.as_deref(),
                INVALID_REQUEST,
                &format!("invalid request: {reason}"),
                None,
            );
            return json_response(StatusCode::BAD_REQUEST, body);
        }
    };
    let (method, params) = match &message {
        Incoming::Request { method, params, .. } | Incoming::Notification { method, params } => {
            (method.as_ref(), *params)
        }
        Incoming::Response { .. } => ("", None),
    };
    if !method.is_empty() && modern::is_modern(&headers, method, params) {
        return modern::handle(&node, &headers, message, accepts, &caller).await;
    }
    if let Some(refused) = legacy_version_refused(&headers) {
        return refused;
    }
    if let Incoming::Request { id, method, params } = &message
        && method == "initialize"
    {
        return initialize(&node, id.get(), *params, &caller.owner());
    }
    let session = match session(&node, &headers, &caller) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    match message {
        Incoming::Notification { method, params } => {
            notification(&node, &session, &method, params);
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Response { id, result, error } => {
            client_response(&node, &session, id.get(), result, error);
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Request { id, method, params } => {
            // Sessions opened before a drain keep working until the node exits (a client
            // finishing a call may still list or read); only new sessions are refused.
            let span = tracing::info_span!("mcp.request", method = &*method, session = %session.id);
            // A child of the caller's trace (the edge forwards its `traceparent`).
            ramen_telemetry::extract_http(&span, &headers);
            let reply = tracing::Instrument::instrument(
                methods::dispatch(&node, &session, &caller, id, &method, params, accepts),
                span,
            )
            .await;
            into_response(reply)
        }
    }
}

/// Answers a request refused before its body was read. The body is read (up to the cap)
/// first: hyper closes a connection whose request body is left unread, and a client that
/// retries at once on its pooled connection (the SDK falling back from a newer revision's
/// probe) would otherwise see "server disconnected". A body above the cap closes instead.
async fn refuse_unread(body: Body, limit: usize, mut refused: Response) -> Response {
    if to_bytes(body, limit).await.is_err() {
        refused.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    refused
}

pub(crate) fn into_response(reply: Reply) -> Response {
    match reply {
        Reply::Json(body) => json_response(StatusCode::OK, body),
        Reply::Status(status, body) => json_response(status, body),
        Reply::Overloaded(body) => {
            let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, body);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
        Reply::Sse(body) => sse_response(body),
    }
}

pub(crate) fn sse_response(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            // Tells nginx-style proxies not to buffer the stream.
            (header::HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no")),
        ],
        body,
    )
        .into_response()
}

#[derive(Deserialize, Default)]
struct InitializeParams<'a> {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: String,
    #[serde(borrow, default)]
    capabilities: Option<&'a serde_json::value::RawValue>,
    #[serde(rename = "clientInfo", borrow, default)]
    client_info: Option<&'a serde_json::value::RawValue>,
}

fn initialize(
    node: &Node,
    id: &str,
    params: Option<&serde_json::value::RawValue>,
    owner: &str,
) -> Response {
    if node.is_draining() {
        let mut response = http_error(
            StatusCode::SERVICE_UNAVAILABLE,
            INVALID_REQUEST,
            "this node is shutting down; retry",
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    }
    let params: InitializeParams =
        params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or_default();
    let version = if SUPPORTED_VERSIONS.contains(&params.protocol_version.as_str()) {
        params.protocol_version.as_str()
    } else {
        LATEST_VERSION
    };
    let object = |raw: Option<&serde_json::value::RawValue>| {
        raw.map(|r| r.get().to_owned())
            .filter(|r| r.starts_with('{'))
            .unwrap_or_else(|| "{}".into())
    };
    let (capabilities, client_info) = (object(params.capabilities), object(params.client_info));
    let caps = crate::mcp::session::Caps {
        node: node.settings.max_sessions,
        per_key: node.settings.max_sessions_per_key,
    };
    let session = match node.sessions.create(version, &capabilities, &client_info, owner, caps) {
        Ok(session) => session,
        Err(full) => {
            return http_error(StatusCode::SERVICE_UNAVAILABLE, INVALID_REQUEST, &full.to_string());
        }
    };
    node.metrics.sessions.set(node.sessions.len() as i64);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": { "listChanged": true },
            "resources": { "listChanged": true, "subscribe": true },
            "prompts": { "listChanged": true },
            "logging": {},
            "completions": {},
        },
        "serverInfo": { "name": node.settings.server_name, "version": env!("CARGO_PKG_VERSION") },
    });
    if let Some(instructions) = &node.settings.instructions {
        result["instructions"] = json!(instructions);
    }
    let mut response = json_response(StatusCode::OK, jsonrpc::result(id, &result.to_string()));
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION, value);
    }
    response
}

fn notification(
    node: &Node,
    session: &Session,
    method: &str,
    params: Option<&serde_json::value::RawValue>,
) {
    if method != "notifications/cancelled" {
        return; // initialized, progress, roots/list_changed: nothing for the node to do
    }
    #[derive(Deserialize)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: Box<serde_json::value::RawValue>,
    }
    let Some(cancelled) = params.and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
    else {
        return;
    };
    let rid = session.calls.lock().get(cancelled.request_id.get()).copied();
    if let Some(rid) = rid {
        node.runtime.cancel(rid);
    }
}

/// The client answers a request a tool made through us (sampling, elicitation).
fn client_response(
    node: &Node,
    session: &Session,
    id: &str,
    result: Option<&serde_json::value::RawValue>,
    error: Option<&serde_json::value::RawValue>,
) {
    let Some(rid) = session.server_requests.lock().remove(id) else { return };
    match (result, error) {
        (Some(result), _) => node.runtime.respond(rid, Ok(result)),
        (None, Some(error)) => {
            let error = serde_json::from_str(error.get()).unwrap_or_else(|_| {
                crate::runtime::RpcError::new(INVALID_REQUEST, "malformed error from client")
            });
            node.runtime.respond(rid, Err(&error));
        }
        (None, None) => {}
    }
}

async fn get_mcp(
    State(node): State<Arc<Node>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    serve_get(node, peer, headers).await
}

async fn serve_get(node: Arc<Node>, peer: SocketAddr, headers: HeaderMap) -> Response {
    let caller = match admit(&node, &headers, peer).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    if modern_header(&headers) && !headers.contains_key(&SESSION) {
        return method_not_allowed();
    }
    if let Some(refused) = legacy_version_refused(&headers) {
        return refused;
    }
    if !accepts(&headers).sse {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "GET opens an event stream: Accept must include text/event-stream",
        );
    }
    let session = match session(&node, &headers, &caller) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    // `None` marks the end of the session's events (its last handle is gone): `select` alone
    // would go on with the keep-alives, holding the connection (and a graceful shutdown).
    let events = BroadcastStream::new(session.events())
        .filter_map(|event| async move { event.ok().map(Some) })
        .chain(futures::stream::once(async { None }));
    drop(session); // the stream ends when the session does
    let keepalive = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(KEEPALIVE))
        .map(|_| Some(Bytes::from_static(b": keep-alive\n\n")));
    let merged = futures::stream::select(events, keepalive)
        .take_while(|event| futures::future::ready(event.is_some()))
        .filter_map(|event| async move { event.map(Ok::<_, Infallible>) });
    let merged = take_until_closed(merged, node, headers);
    sse_response(Body::from_stream(merged))
}

/// Ends a GET stream once its session is gone (DELETE, expiry, drain), even though the
/// keep-alive ticker alone would keep it open forever.
fn take_until_closed(
    stream: impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    node: Arc<Node>,
    headers: HeaderMap,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let id = headers.get(&SESSION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    stream.take_while(move |_| {
        let open = node.sessions.contains(&id);
        async move { open }
    })
}

async fn delete_mcp(
    State(node): State<Arc<Node>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    serve_delete(node, peer, headers).await
}

async fn serve_delete(node: Arc<Node>, peer: SocketAddr, headers: HeaderMap) -> Response {
    let caller = match admit(&node, &headers, peer).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    if modern_header(&headers) && !headers.contains_key(&SESSION) {
        return method_not_allowed();
    }
    if let Some(refused) = legacy_version_refused(&headers) {
        return refused;
    }
    let session = match session(&node, &headers, &caller) {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    node.sessions.remove(&session.id);
    node.metrics.sessions.set(node.sessions.len() as i64);
    for rid in session.calls.lock().values() {
        node.runtime.cancel(*rid);
    }
    StatusCode::OK.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts_of(lines: &[&str]) -> (bool, bool) {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(header::ACCEPT, HeaderValue::from_str(line).unwrap());
        }
        let accepts = accepts(&headers);
        (accepts.json, accepts.sse)
    }

    #[test]
    fn reads_the_types_a_client_names() {
        assert_eq!(accepts_of(&[]), (true, false), "no Accept: JSON only");
        assert_eq!(accepts_of(&["application/json, text/event-stream"]), (true, true));
        assert_eq!(accepts_of(&["application/json"]), (true, false));
        assert_eq!(accepts_of(&["text/event-stream"]), (false, true));
        assert_eq!(accepts_of(&["*/*"]), (true, true));
        assert_eq!(accepts_of(&["application/*;q=0.5, text/*"]), (true, true));
        assert_eq!(accepts_of(&["text/html"]), (false, false));
    }

    #[test]
    fn reads_every_accept_line() {
        assert_eq!(accepts_of(&["application/json", "text/event-stream"]), (true, true));
    }

    #[test]
    fn compares_types_without_regard_to_case() {
        assert_eq!(accepts_of(&["Application/JSON, Text/Event-Stream"]), (true, true));
    }

    #[test]
    fn does_not_take_a_longer_type_for_json() {
        assert_eq!(accepts_of(&["application/json-seq"]), (false, false));
        assert_eq!(accepts_of(&["application/jsonl, text/event-streams"]), (false, false));
    }

    #[test]
    fn a_body_is_json_by_its_media_type() {
        let is_json = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
            is_json_body(&headers)
        };
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json(" application/json ;charset=UTF-8"));
        assert!(!is_json("application/jsonl"));
        assert!(!is_json("application/json-patch+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json_body(&HeaderMap::new()), "no Content-Type");
    }

    #[test]
    fn a_zero_weight_refuses_a_type() {
        assert_eq!(accepts_of(&["application/json;q=0, text/event-stream"]), (false, true));
        assert_eq!(accepts_of(&["*/*, text/event-stream; Q=0"]), (true, false));
        assert_eq!(accepts_of(&["*/*;q=0"]), (false, false));
        assert_eq!(accepts_of(&["application/json;q=0.001"]), (true, false));
    }
}
