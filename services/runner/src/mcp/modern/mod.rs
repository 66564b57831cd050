//! MCP 2026-07-28 on the same endpoint as the session-based revisions: every request stands
//! alone (no initialize, no session), carries its protocol version and client capabilities
//! in `_meta` and mirrors its method and target in headers. Lists come from the catalog
//! with cache hints, calls go to the runtime like a session's, `server/discover` describes
//! the node and `subscriptions/listen` streams list changes. Methods of the older revisions
//! (`ping`, `logging/setLevel`, `resources/subscribe`, `initialize`…) are HTTP 404 + -32601.

mod call;
pub mod envelope;
mod listen;
mod params;
pub mod park;
pub mod stateless;

use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use self::envelope::{MODERN_VERSIONS, Params, Refusal};
use self::stateless::inject;
use super::calls::{Accepts, Reply};
use super::http::{into_response, json_response};
use super::jsonrpc::{
    self, INVALID_PARAMS, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, OVERLOADED,
};
use super::methods;
use super::session::SUPPORTED_VERSIONS;
use super::utilities;
use crate::catalog::Kind;
use crate::node::Node;
use crate::policy::CallerId;

pub use envelope::is_modern;

/// Serves one 2026-07-28 message.
pub async fn handle(
    node: &Arc<Node>,
    headers: &HeaderMap,
    message: Incoming<'_>,
    accepts: Accepts,
    caller: &CallerId,
) -> Response {
    match message {
        // No client notification is defined on this transport; accepting one is harmless.
        Incoming::Notification { .. } => StatusCode::ACCEPTED.into_response(),
        Incoming::Response { id, .. } => refuse(
            Some(id.get()),
            Refusal::new(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "a 2026-07-28 client sends no responses (there are no server-to-client requests)",
            ),
        ),
        Incoming::Request { id, method, params } => {
            let span = tracing::info_span!("mcp.request", method = &*method, era = "2026-07-28");
            tracing::Instrument::instrument(
                request(node, headers, caller, (id, &method, params), accepts),
                span,
            )
            .await
        }
    }
}

async fn request(
    node: &Arc<Node>,
    headers: &HeaderMap,
    caller: &CallerId,
    (id, method, params): (&RawValue, &str, Option<&RawValue>),
    accepts: Accepts,
) -> Response {
    let started = Instant::now();
    let id_text = id.get();
    let parsed: Params = match params.map(|p| serde_json::from_str(p.get())) {
        None => Params::default(),
        Some(Ok(parsed)) => parsed,
        Some(Err(error)) => {
            let refusal = Refusal::new(
                StatusCode::BAD_REQUEST,
                INVALID_PARAMS,
                format!("malformed params: {error}"),
            );
            return refuse(Some(id_text), refusal);
        }
    };
    let envelope = match envelope::validate(headers, method, &parsed) {
        Ok(envelope) => envelope,
        Err(refusal) => {
            node.metrics.record(label(method), "", "refused", started.elapsed().as_secs_f64());
            return refuse(Some(id_text), refusal);
        }
    };
    if node.is_draining() {
        // Not processed: the edge (or the client) may send it to another node.
        let mut response = json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            jsonrpc::error(Some(id_text), OVERLOADED, "this node is shutting down; retry", None),
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    }
    let answer = |result: String| json_response(StatusCode::OK, jsonrpc::result(id_text, &result));
    let response = match method {
        "server/discover" => answer(discover(node)),
        "tools/list" => list(node, caller, id_text, &parsed, Kind::Tools, "tools"),
        "prompts/list" => list(node, caller, id_text, &parsed, Kind::Prompts, "prompts"),
        "resources/list" => list(node, caller, id_text, &parsed, Kind::Resources, "resources"),
        "resources/templates/list" => {
            list(node, caller, id_text, &parsed, Kind::ResourceTemplates, "resourceTemplates")
        }
        "completion/complete" => match utilities::completion(params) {
            Ok(result) => answer(inject(result, r#""resultType":"complete""#)),
            Err(message) => into_response(Reply::error(id_text, INVALID_PARAMS, message)),
        },
        "tools/call" | "resources/read" | "prompts/get" => {
            let request = call::Request { headers, caller, id, method, params: &parsed, envelope };
            return call::runtime_bound(node, request, accepts, started).await;
        }
        "subscriptions/listen" => return listen::open(node, id, &parsed, accepts),
        _ => {
            node.metrics.record("unknown", "", "error", started.elapsed().as_secs_f64());
            let message = format!(
                "method not found: {method} (not part of MCP 2026-07-28; ping, logging/setLevel, \
                 resources/subscribe and initialize belong to the session revisions)"
            );
            return json_response(
                StatusCode::NOT_FOUND,
                jsonrpc::error(Some(id_text), METHOD_NOT_FOUND, &message, None),
            );
        }
    };
    node.metrics.record(method, "", "ok", started.elapsed().as_secs_f64());
    response
}

/// Metric label for a refused request: only known method names, never client input.
fn label(method: &str) -> &str {
    match method {
        "server/discover"
        | "tools/list"
        | "prompts/list"
        | "resources/list"
        | "resources/templates/list"
        | "completion/complete"
        | "tools/call"
        | "resources/read"
        | "prompts/get"
        | "subscriptions/listen" => method,
        _ => "unknown",
    }
}

pub(crate) fn refuse(id: Option<&str>, refusal: Refusal) -> Response {
    json_response(
        refusal.status,
        jsonrpc::error(id, refusal.code, &refusal.message, refusal.data.as_ref()),
    )
}

/// `_meta` every node-built result carries: who answered.
fn server_meta(node: &Node) -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {
        "name": node.settings.server_name,
        "version": env!("CARGO_PKG_VERSION"),
    }})
}

fn discover(node: &Node) -> String {
    let mut supported: Vec<&str> = MODERN_VERSIONS.to_vec();
    supported.extend(SUPPORTED_VERSIONS);
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": supported,
        "capabilities": {
            "tools": { "listChanged": true },
            "resources": { "listChanged": true, "subscribe": true },
            "prompts": { "listChanged": true },
            "completions": {},
            "logging": {},
        },
        "_meta": server_meta(node),
        "ttlMs": node.settings.list_ttl.as_millis() as u64,
        "cacheScope": "public",
    });
    if let Some(instructions) = &node.settings.instructions {
        result["instructions"] = json!(instructions);
    }
    result.to_string()
}

/// A list page with the cache hints 2026-07-28 requires: fresh for `list_ttl` (a change
/// within it is announced on `subscriptions/listen`), `public` while the list is what the
/// packages serve, `private` once the blocked or disabled lists hide part of it or the
/// environment has rules of who may call what — the answer is then this environment's or this
/// caller's view, not something to share.
fn list(
    node: &Node,
    caller: &CallerId,
    id: &str,
    params: &Params,
    kind: Kind,
    field: &str,
) -> Response {
    let finish = |body: &mut serde_json::Map<String, Value>, filtered: bool| {
        body.insert("resultType".into(), json!("complete"));
        body.insert("ttlMs".into(), json!(node.settings.list_ttl.as_millis() as u64));
        body.insert("cacheScope".into(), json!(if filtered { "private" } else { "public" }));
        body.insert("_meta".into(), server_meta(node));
    };
    match methods::list_page(node, caller, params.cursor.as_deref(), kind, field, finish) {
        Ok(result) => json_response(StatusCode::OK, jsonrpc::result(id, &result)),
        Err(message) => into_response(Reply::error(id, INVALID_PARAMS, message)),
    }
}
