//! The edge's request path: resolve the environment, choose (or follow) a worker, forward
//! the request, and stream the answer back unbuffered. A session's requests follow its
//! node; everything else (initialize, stateless 2026-07-28 requests) is placed by weight.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::PathAndQuery;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::Full;
use ipnet::IpNet;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::ZONE_HEADER;
use crate::access::{Gate, Refused};
use crate::directory::{
    Admission, Blocked, Directory, DirectoryError, Environment, Route, WorkerRoute, ZoneRoute,
};
use crate::keys::KeyBook;
use crate::select::{self, Refusal};
use crate::session::{OpenedSession, SessionSealer};
use crate::stateless;
use crate::upstream::{Failure, Upstream};

const SESSION: &str = "mcp-session-id";
// Names the forwarded request is given, made once: inserting by `&str` parses the name on every
// request.
pub(crate) const SESSION_NAME: HeaderName = HeaderName::from_static(SESSION);
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const ZONE_NAME: HeaderName = HeaderName::from_static(ZONE_HEADER);

#[derive(Clone, Debug)]
pub struct EdgeSettings {
    pub max_body_bytes: usize,
    /// The MCP path on the worker nodes.
    pub node_path: PathAndQuery,
    pub connect_timeout: Duration,
    /// Peers (a cloud load balancer) whose `X-Forwarded-For` the edge believes.
    pub trusted_proxies: Vec<IpNet>,
}

impl Default for EdgeSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            node_path: PathAndQuery::from_static("/mcp"),
            connect_timeout: Duration::from_secs(2),
            trusted_proxies: Vec::new(),
        }
    }
}

pub struct Edge {
    directory: Arc<dyn Directory>,
    /// MCP keys checked here before placing; `None` leaves them to the nodes.
    keys: Option<Arc<KeyBook>>,
    /// Access tokens, rules and rate limits.
    gate: Gate,
    sealer: SessionSealer,
    upstream: Arc<Upstream>,
    settings: EdgeSettings,
    requests: Family<RequestLabels, Counter>,
}

/// Labels of `ramen_edge_requests_total`. A path naming no environment counts under group
/// `-`: anyone can send any path, and each unknown name must not become a series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    group: String,
    status: u16,
}

const UNKNOWN_GROUP: &str = "-";

impl Edge {
    pub fn new(
        directory: Arc<dyn Directory>,
        sealer: SessionSealer,
        settings: EdgeSettings,
    ) -> Self {
        Self {
            directory,
            keys: None,
            gate: Gate::default(),
            sealer,
            upstream: Upstream::new(settings.connect_timeout),
            settings,
            requests: Family::default(),
        }
    }

    /// Checks MCP keys at the edge too (see [`KeyBook`]).
    pub fn with_keys(mut self, keys: Arc<KeyBook>) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Registers the edge's series (`ramen_edge_requests_total{group,status}`) on `metrics`.
    pub fn register_metrics(&self, metrics: &ramen_telemetry::Metrics) {
        metrics.register(
            "edge_requests",
            "MCP requests through the edge, by group and HTTP status",
            self.requests.clone(),
        );
    }
}

/// `/mcp/{group}/{environment}` for POST, GET and DELETE, and each environment's protected
/// resource metadata (RFC 9728) where it takes OAuth tokens.
pub fn router(edge: Arc<Edge>) -> Router {
    Router::new()
        .route("/mcp/{group}/{environment}", any(handle))
        .route("/.well-known/oauth-protected-resource/mcp/{group}/{environment}", any(metadata))
        .with_state(edge)
}

/// The environment's RFC 9728 document: the resource, its authorization servers and scopes.
/// Readable from any origin (browser-based MCP clients discover through it) and by anyone: it
/// says where to sign in, nothing more.
async fn metadata(
    State(edge): State<Arc<Edge>>,
    Path((group, environment)): Path<(String, String)>,
    method: Method,
) -> Response {
    if !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return refuse(StatusCode::METHOD_NOT_ALLOWED, "the resource metadata is read with GET");
    }
    let document = match edge.directory.environment(&group, &environment).await {
        Ok(found) => found.auth.metadata(),
        Err(DirectoryError::Unavailable(_)) => {
            return unavailable("routing information is unavailable; retry");
        }
        Err(DirectoryError::NotFound { .. }) => None,
    };
    let cors = [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
        (header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, OPTIONS")),
    ];
    match document {
        Some(_) if method == Method::OPTIONS => (StatusCode::NO_CONTENT, cors).into_response(),
        Some(document) => (
            StatusCode::OK,
            cors,
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            document.to_string(),
        )
            .into_response(),
        None => refuse(StatusCode::NOT_FOUND, "no OAuth-protected MCP endpoint here"),
    }
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body.to_string(),
    )
        .into_response()
}

/// `/mcp/{group}/{environment}` for POST, GET and DELETE, answered ahead of axum's routing
/// (see [`ramen_lifecycle::FastRoute`]). [`router`] serves the same paths behind it, for every
/// request this declines (other methods, a name with a percent-escape for axum to decode, a
/// request with no peer address), so the edge answers as it would through the router alone.
pub struct EdgeRoute {
    edge: Arc<Edge>,
}

impl EdgeRoute {
    pub fn new(edge: Arc<Edge>) -> Self {
        Self { edge }
    }

    /// Whether [`FastRoute::route`](ramen_lifecycle::FastRoute::route) takes `request`.
    pub fn takes(request: &Request<Body>) -> bool {
        taken(request).is_some()
    }
}

impl ramen_lifecycle::FastRoute for EdgeRoute {
    fn route(&self, request: Request<Body>) -> Result<ramen_lifecycle::Answer, Request<Body>> {
        let Some((group, environment, peer)) = taken(&request) else {
            return Err(request);
        };
        let (group, environment) = (group.to_owned(), environment.to_owned());
        let edge = self.edge.clone();
        Ok(Box::pin(async move { answer(&edge, group, environment, peer, request).await }))
    }
}

/// The group, environment and peer of a request [`EdgeRoute`] takes.
fn taken(request: &Request<Body>) -> Option<(&str, &str, SocketAddr)> {
    if !matches!(*request.method(), Method::POST | Method::GET | Method::DELETE) {
        return None;
    }
    let (group, environment) = mcp_path(request.uri().path())?;
    let &ConnectInfo(peer) = request.extensions().get::<ConnectInfo<SocketAddr>>()?;
    Some((group, environment, peer))
}

/// The group and environment of an MCP path as the router's `/mcp/{group}/{environment}`
/// matches it, for names that need no percent-decoding (ramen's names never do).
fn mcp_path(path: &str) -> Option<(&str, &str)> {
    let (group, environment) = path.strip_prefix("/mcp/")?.split_once('/')?;
    let plain = |name: &str| !name.is_empty() && !name.contains(['/', '%']);
    (plain(group) && plain(environment)).then_some((group, environment))
}

async fn handle(
    State(edge): State<Arc<Edge>>,
    Path((group, environment)): Path<(String, String)>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
    answer(&edge, group, environment, peer, request).await
}

/// The answer to an MCP request, counted by group and status.
async fn answer(
    edge: &Arc<Edge>,
    group: String,
    environment: String,
    peer: SocketAddr,
    request: Request<Body>,
) -> Response {
    let (response, known) = serve(edge, &group, &environment, peer, request).await;
    let group = if known { group } else { UNKNOWN_GROUP.to_owned() };
    edge.requests.get_or_create(&RequestLabels { group, status: response.status().as_u16() }).inc();
    response
}

/// The answer, and whether the path named an environment the directory knows.
async fn serve(
    edge: &Arc<Edge>,
    group: &str,
    environment: &str,
    peer: SocketAddr,
    request: Request<Body>,
) -> (Response, bool) {
    if !matches!(*request.method(), Method::POST | Method::GET | Method::DELETE) {
        let message = "the MCP endpoint takes POST, GET and DELETE";
        return (refuse(StatusCode::METHOD_NOT_ALLOWED, message), false);
    }
    let client = match ramen_client_addr::client_ip(
        peer.ip(),
        request.headers(),
        &edge.settings.trusted_proxies,
    ) {
        Ok(client) => client,
        Err(err) => return (refuse(StatusCode::BAD_REQUEST, &err.to_string()), false),
    };
    let found = match edge.directory.environment(group, environment).await {
        Ok(found) => found,
        Err(DirectoryError::NotFound { .. }) => {
            return (refuse(StatusCode::NOT_FOUND, "no such MCP endpoint"), false);
        }
        Err(DirectoryError::Unavailable(reason)) => {
            tracing::warn!(%reason, %group, %environment, "edge cannot resolve the environment");
            let message = "routing information is unavailable; retry";
            return (refuse(StatusCode::SERVICE_UNAVAILABLE, message), false);
        }
    };
    let Environment { route, blocked, auth } = found;
    let authorization = request.headers().get(header::AUTHORIZATION);
    let authorization = authorization.and_then(|v| v.to_str().ok());
    let env = (group, environment);
    let caller = match edge.gate.authenticate(env, &auth, edge.keys.as_deref(), authorization).await
    {
        Ok(caller) => caller,
        Err(Refused::Key) => return (unauthorized(), true),
        Err(Refused::Token { rejection, challenge }) => {
            return (token_refused(&rejection, &challenge), true);
        }
    };
    if *request.method() == Method::POST
        && let Err(wait) = edge.gate.admit(env, &caller, auth.calls_per_second)
    {
        return (rate_limited(wait, auth.calls_per_second), true);
    }
    if stateless::is_stateless(request.headers())
        && let Some(target) = stateless::named_target(request.headers())
        && caller.who().is_some_and(|who| auth.rules.grant(&who).is_nothing())
    {
        let message = ramen_call_rules::not_available_message(target.0, &target.1);
        let (parts, body) = request.into_parts();
        let body = ramen_lifecycle::read_body(body, edge.settings.max_body_bytes).await;
        let body = body.unwrap_or_default();
        drop(parts);
        return (blocked_answer(&body, &message), true);
    }
    (routed(edge, &route, &blocked, env, client, request).await, true)
}

/// 401 or 403 with the OAuth challenge (where the metadata is, the scopes to ask for).
fn token_refused(rejection: &ramen_oauth_resource::Rejection, challenge: &str) -> Response {
    let message = match rejection {
        ramen_oauth_resource::Rejection::InsufficientScope(_) => {
            "the access token lacks the scope this environment requires"
        }
        _ => "a valid OAuth access token for this environment is required",
    };
    let status = StatusCode::from_u16(rejection.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = refuse(status, message);
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// 429 with when to retry (whole seconds, at least 1).
fn rate_limited(wait: Duration, per_second: u32) -> Response {
    let mut response = refuse(
        StatusCode::TOO_MANY_REQUESTS,
        &format!(
            "this caller's limit of {per_second} calls per second on this environment is reached; retry later"
        ),
    );
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// What the node answers a request without a live key, so a client sees one behaviour.
fn unauthorized() -> Response {
    let mut response = refuse(
        StatusCode::UNAUTHORIZED,
        "a valid MCP key is required (Authorization: Bearer <key>)",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Bearer realm="ramen", error="invalid_token""#),
    );
    response
}

async fn routed(
    edge: &Arc<Edge>,
    route: &Route,
    blocked: &Blocked,
    (group, environment): (&str, &str),
    client: IpAddr,
    request: Request<Body>,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = match ramen_lifecycle::read_body(body, edge.settings.max_body_bytes).await {
        Ok(body) => body,
        Err(refused) => return refuse(refused.status, &refused.message),
    };
    if let Some(sealed) = parts.headers.get(&SESSION_NAME) {
        let opened = sealed.to_str().ok().and_then(|sealed| edge.sealer.open(sealed));
        let Some(session) = opened else {
            return refuse(StatusCode::NOT_FOUND, "session not found; initialize a new one");
        };
        return follow_session(edge, route, client, parts, body, session).await;
    }
    let stateless = stateless::is_stateless(&parts.headers);
    if stateless {
        if let Some(message) = stateless::blocked_target(&parts.headers, blocked) {
            return blocked_answer(&body, &message);
        }
        if let Some(node) = stateless::waiting_on(&body) {
            return resume_on(edge, route, &node, client, parts, body).await;
        }
    }
    place(edge, route, (group, environment), client, parts, body).await
}

/// A retry answering a question a node asked mid-call goes to that node, which holds the
/// waiting call (no failover: no other node could resume it).
async fn resume_on(
    edge: &Edge,
    route: &Route,
    node: &str,
    client: IpAddr,
    parts: http::request::Parts,
    body: Bytes,
) -> Response {
    let found =
        route.zones.iter().find_map(|z| z.workers.iter().find(|w| w.id == node).map(|w| (z, w)));
    let gone = |body: &[u8]| {
        let id = stateless::request_id(body);
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"the node that asked (requestState) is gone; call again without requestState"}}}}"#
        );
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            text,
        )
            .into_response()
    };
    let Some((zone, worker)) = found else { return gone(&body) };
    if let Some(refused) = admission_refused(zone, client) {
        return refused;
    }
    match forward(edge, worker, None, client, &parts, body.clone()).await {
        Ok(response) => response,
        Err(_) => gone(&body),
    }
}

/// A blocked target answers -32601 (the product's rule), as the node would.
fn blocked_answer(body: &[u8], message: &str) -> Response {
    let id = stateless::request_id(body);
    let message = serde_json::to_string(message).unwrap_or_else(|_| "\"blocked\"".into());
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":{message}}}}}"#);
    (StatusCode::OK, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body)
        .into_response()
}

/// A request of an existing session goes to the node that created it, or gets 404.
async fn follow_session(
    edge: &Edge,
    route: &Route,
    client: IpAddr,
    parts: http::request::Parts,
    body: Bytes,
    OpenedSession { worker, node_session }: OpenedSession,
) -> Response {
    let hosting = route.zones.iter().find_map(|z| z.hosting(&worker).map(|w| (z, w)));
    let Some((zone, worker)) = hosting else {
        return refuse(StatusCode::NOT_FOUND, "the session's worker is gone; initialize a new one");
    };
    if let Some(refused) = admission_refused(zone, client) {
        return refused;
    }
    match forward(edge, worker, Some(&node_session), client, &parts, body).await {
        Ok(response) => response,
        Err(_) => {
            refuse(StatusCode::NOT_FOUND, "the session's worker is gone; initialize a new one")
        }
    }
}

/// A request without a session (initialize, or a stateless request): pinned zone or by
/// weight, failing over to the next worker and zone while connections are refused or workers
/// answer 503 (draining or at their cap: a node answers 503 before it processes anything, so
/// another worker may take the request). When no worker of the route took it, the route may
/// be stale (its workers restarted since it was cached): once more on a fresh one, unless the
/// directory answers with the same route (fetched a moment ago), so an overload that has every
/// worker at its cap is not offered to them twice.
async fn place(
    edge: &Edge,
    route: &Route,
    (group, environment): (&str, &str),
    client: IpAddr,
    parts: http::request::Parts,
    body: Bytes,
) -> Response {
    let refused = match place_on(edge, route, (group, environment), client, &parts, &body).await {
        Placement::Answered(response) => return response,
        Placement::NotTaken(refused) => refused,
    };
    let fresh = match edge.directory.refetch(group, environment).await {
        // The same route (fetched a moment ago): its workers were all just tried.
        Ok(fresh) if !std::ptr::eq(&*fresh, route) => fresh,
        _ => {
            return refused
                .unwrap_or_else(|| unavailable("every worker of the environment is unreachable"));
        }
    };
    match place_on(edge, &fresh, (group, environment), client, &parts, &body).await {
        Placement::Answered(response) => response,
        // Every worker refused: pass the last refusal on (its Retry-After and JSON-RPC error).
        Placement::NotTaken(refused) => refused.unwrap_or_else(|| {
            if fresh.zones.iter().all(|z| z.workers.is_empty()) {
                unavailable("no ready worker serves this environment right now")
            } else {
                unavailable("every worker of the environment is unreachable")
            }
        }),
    }
}

enum Placement {
    /// A worker's answer, or the edge's final refusal (unknown zone, source not allowed).
    Answered(Response),
    /// No worker took the request; the last 503 one answered, if any.
    NotTaken(Option<Response>),
}

async fn place_on(
    edge: &Edge,
    route: &Route,
    (group, environment): (&str, &str),
    client: IpAddr,
    parts: &http::request::Parts,
    body: &Bytes,
) -> Placement {
    let pinned = parts.headers.get(&ZONE_NAME).and_then(|v| v.to_str().ok()).map(str::trim);
    let zones = match select::zones(route, pinned, client) {
        Ok(zones) => zones,
        Err(Refusal::UnknownZone(zone)) => {
            return Placement::Answered(refuse(
                StatusCode::NOT_FOUND,
                &format!("zone {zone:?} does not serve this environment"),
            ));
        }
        Err(Refusal::Forbidden) => return Placement::Answered(forbidden(client)),
        Err(Refusal::UnreadableRules(zone)) => return Placement::Answered(unreadable(&zone)),
        Err(Refusal::NoWorkers) => return Placement::NotTaken(None),
    };
    let mut refused = None;
    for zone in zones {
        for worker in select::workers(zone) {
            match forward(edge, worker, None, client, parts, body.clone()).await {
                Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => {
                    tracing::debug!(worker = %worker.id, zone = %zone.zone, "worker refused the request (503); trying the next");
                    refused = Some(response);
                }
                Ok(response) => return Placement::Answered(response),
                Err(err) => {
                    tracing::warn!(worker = %worker.id, zone = %zone.zone, %err, "worker unreachable; trying the next");
                    edge.directory.invalidate(group, environment);
                }
            }
        }
    }
    Placement::NotTaken(refused)
}

fn forbidden(client: IpAddr) -> Response {
    refuse(StatusCode::FORBIDDEN, &format!("source address {client} is not allowed"))
}

/// A zone whose IP rules are not CIDRs (the rules are logged, not told to the caller).
fn unreadable(zone: &str) -> Response {
    let message = format!(
        "zone {zone:?} cannot be served: its IP rules cannot be read; an operator must fix them"
    );
    refuse(StatusCode::SERVICE_UNAVAILABLE, &message)
}

fn admission_refused(zone: &ZoneRoute, client: IpAddr) -> Option<Response> {
    match zone.admits(client) {
        Admission::Allowed => None,
        Admission::Forbidden => Some(forbidden(client)),
        Admission::Unreadable => Some(unreadable(&zone.zone)),
    }
}

fn unavailable(message: &str) -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, message);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Sends the request to `worker`. `Err` only when it was not delivered (no connection, or
/// one closed before the request was written), so the caller may safely try another worker.
async fn forward(
    edge: &Edge,
    route: &WorkerRoute,
    node_session: Option<&str>,
    client: IpAddr,
    parts: &http::request::Parts,
    body: Bytes,
) -> Result<Response, Failure> {
    let worker = route.address.as_str();
    let mut builder = Request::builder()
        .method(parts.method.clone())
        .uri(Uri::from(edge.settings.node_path.clone()));
    let headers = builder.headers_mut().expect("fresh builder");
    // The client's headers and the four added below, in one allocation.
    headers.reserve(parts.headers.len() + 4);
    copy_headers(&parts.headers, headers);
    let host = HeaderValue::from_str(worker)
        .map_err(|_| Failure::Undelivered(format!("{worker:?} is not a host:port")))?;
    headers.insert(header::HOST, host);
    if let Some(session) = node_session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(SESSION_NAME, session);
    }
    // The node trusts the edge and reads the right-most entry: the client the edge settled
    // on, alone, so the node cannot read the chain differently (the client's own words left
    // of it are never passed on).
    if let Some(value) = forwarded_for(client) {
        headers.insert(X_FORWARDED_FOR, value);
    }
    // The node's spans join the trace of the request that reached the edge.
    if let Some(value) =
        ramen_telemetry::current_traceparent().and_then(|t| HeaderValue::from_str(&t).ok())
    {
        headers.insert(TRACEPARENT, value);
    }
    let request = builder.body(Full::new(body)).expect("valid request parts");
    let upstream = match edge.upstream.send(worker, route.local.as_deref(), request).await {
        Ok(upstream) => upstream,
        Err(err @ Failure::Undelivered(_)) => return Err(err),
        Err(err @ Failure::Broken(_)) => {
            tracing::warn!(%worker, %err, "worker failed mid-request");
            return Ok(refuse(StatusCode::BAD_GATEWAY, "the worker failed while answering"));
        }
    };
    let (mut head, answer) = upstream.into_parts();
    strip_hop_by_hop(&mut head.headers);
    if let Some(session) =
        head.headers.get(&SESSION_NAME).and_then(|v| v.to_str().ok()).map(str::to_owned)
        && let Ok(value) = HeaderValue::from_str(&edge.sealer.seal(worker, &session))
    {
        head.headers.insert(SESSION_NAME, value);
    }
    Ok(Response::from_parts(head, Body::new(answer)))
}

/// `client` as an `x-forwarded-for` value, the same text as its `to_string`. An IPv4 address
/// is written by hand: `Display` goes through the formatter's padding for each octet, ~1.5k
/// instructions per proxied call.
fn forwarded_for(client: IpAddr) -> Option<HeaderValue> {
    let IpAddr::V4(v4) = client else {
        return HeaderValue::from_str(&client.to_string()).ok();
    };
    let mut text = [0u8; 15];
    let mut len = 0;
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            text[len] = b'.';
            len += 1;
        }
        for (at_least, digit) in [(100, octet / 100), (10, octet / 10 % 10), (0, octet % 10)] {
            if octet >= at_least {
                text[len] = b'0' + digit;
                len += 1;
            }
        }
    }
    HeaderValue::from_bytes(&text[..len]).ok()
}

/// Headers of one connection (RFC 9110, 7.6.1), never passed on by a proxy.
fn hop_by_hop(name: &str) -> bool {
    // One `match` (by length, then bytes) rather than a comparison with each name in turn.
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// The client's headers the node is given: not the hop-by-hop ones, nor those its
/// `Connection` header names as options of this connection (RFC 9110 §7.6.1), nor those the
/// edge sets (`host`, `content-length`, the session, `x-forwarded-for`) or reads itself (the
/// zone pin).
fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    // Options are gathered as the headers go by (a lookup of `Connection` first would cost
    // every request a hash); what they name is taken out after, which is rare.
    let mut options = Vec::new();
    for (name, value) in from {
        let text = name.as_str();
        if *name == header::CONNECTION {
            connection_options(value, &mut options);
            continue;
        }
        let skip = hop_by_hop(text)
            || matches!(
                text,
                "host" | "content-length" | SESSION | ZONE_HEADER | "x-forwarded-for"
            );
        if !skip {
            to.append(name.clone(), value.clone());
        }
    }
    for option in options {
        to.remove(option);
    }
}

/// Adds to `options` the header names a `Connection` value lists besides `close` and
/// `keep-alive`, which is what clients send: usually nothing, so nothing is allocated.
fn connection_options<'h>(value: &'h HeaderValue, options: &mut Vec<&'h str>) {
    let Ok(value) = value.to_str() else { return };
    for option in value.split(',').map(str::trim) {
        let ordinary = option.is_empty()
            || option.eq_ignore_ascii_case("close")
            || option.eq_ignore_ascii_case("keep-alive");
        if !ordinary {
            options.push(option);
        }
    }
}

/// Removes from a node's answer the hop-by-hop headers and those its `Connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // A node's answer rarely carries any of them: look at the few names there are, and remove
    // only those found (each removal hashes its name).
    let mut found: Vec<HeaderName> =
        headers.keys().filter(|name| hop_by_hop(name.as_str())).cloned().collect();
    if found.contains(&header::CONNECTION) {
        let mut options = Vec::new();
        for value in headers.get_all(header::CONNECTION) {
            connection_options(value, &mut options);
        }
        let named = options.into_iter().filter_map(|o| HeaderName::from_bytes(o.as_bytes()).ok());
        found.extend(named);
    }
    for name in found {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use http::HeaderMap;

    #[test]
    fn forwarded_for_is_the_address_as_display_writes_it() {
        for text in [
            "0.0.0.0",
            "1.2.3.4",
            "10.0.100.9",
            "127.0.0.1",
            "192.168.10.255",
            "255.255.255.255",
            "::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:10.1.2.3",
        ] {
            let client: IpAddr = text.parse().unwrap();
            let value = super::forwarded_for(client).expect("an address is a valid header value");
            assert_eq!(value.to_str().unwrap(), client.to_string(), "{text}");
        }
    }

    #[test]
    fn the_node_is_not_given_hop_by_hop_headers_nor_those_the_edge_sets() {
        let mut from = HeaderMap::new();
        let edges_own =
            ["host", "content-length", super::SESSION, crate::ZONE_HEADER, "x-forwarded-for"];
        let hop_by_hop = [
            "connection",
            "keep-alive",
            "proxy-authenticate",
            "proxy-authorization",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
        ];
        for name in hop_by_hop.iter().chain(&edges_own) {
            from.insert(http::HeaderName::from_static(name), "x".parse().unwrap());
        }
        from.insert("authorization", "Bearer k".parse().unwrap());
        from.append("accept", "application/json".parse().unwrap());
        from.append("accept", "text/event-stream".parse().unwrap());
        let mut to = HeaderMap::new();
        super::copy_headers(&from, &mut to);
        assert_eq!(to.len(), 3, "{to:?}");
        assert_eq!(to["authorization"], "Bearer k");
        assert_eq!(to.get_all("accept").iter().count(), 2, "repeated headers stay repeated");
    }

    #[test]
    fn headers_the_connection_header_names_are_not_passed_on() {
        let mut from = HeaderMap::new();
        from.append("connection", "keep-alive, X-Hop-Only".parse().unwrap());
        from.append("connection", "close,x-other-hop".parse().unwrap());
        from.insert("x-hop-only", "1".parse().unwrap());
        from.insert("x-other-hop", "2".parse().unwrap());
        from.insert("x-end-to-end", "3".parse().unwrap());
        let mut to = HeaderMap::new();
        super::copy_headers(&from, &mut to);
        assert_eq!(to.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["x-end-to-end"]);

        let mut answer = from.clone();
        super::strip_hop_by_hop(&mut answer);
        assert_eq!(answer.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["x-end-to-end"]);
    }

    #[test]
    fn the_fast_route_takes_only_plain_mcp_paths() {
        assert_eq!(super::mcp_path("/mcp/g/prod"), Some(("g", "prod")));
        assert_eq!(super::mcp_path("/mcp/team-a/env_1.x"), Some(("team-a", "env_1.x")));
        // Left to the router: its 404s, and names it percent-decodes.
        for declined in
            ["/mcp/g", "/mcp/g/", "/mcp//prod", "/mcp/g/prod/", "/mcp/g/prod/x", "/mcp/g%2Fh/prod"]
        {
            assert_eq!(super::mcp_path(declined), None, "{declined}");
        }
        assert_eq!(super::mcp_path("/.well-known/oauth-protected-resource/mcp/g/prod"), None);
    }

    #[test]
    fn hop_by_hop_headers_go_and_the_others_stay() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        super::strip_hop_by_hop(&mut headers);
        assert_eq!(headers.len(), 1);
        headers.insert("connection", "close".parse().unwrap());
        headers.insert("transfer-encoding", "chunked".parse().unwrap());
        headers.insert("upgrade", "h2c".parse().unwrap());
        super::strip_hop_by_hop(&mut headers);
        assert_eq!(headers.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["content-type"]);
    }
}
