//! MCP methods on an established session. Lists are answered by the node from its catalog;
//! calls, reads and prompt renders go to the runtime after the policy allows them.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::calls::{self, Accepts, Reply};
use super::jsonrpc::{self, INVALID_PARAMS, METHOD_NOT_FOUND};
use super::session::{Session, log_level_rank};
use super::utilities;
use crate::catalog::Kind;
use crate::node::Node;

/// Answers one request of an initialized session.
pub async fn dispatch(
    node: &Arc<Node>,
    session: &Arc<Session>,
    id: &RawValue,
    method: &str,
    params: Option<&RawValue>,
    accepts: Accepts,
) -> Reply {
    let started = Instant::now();
    let id_text = id.get();
    let (reply, package, outcome) = match method {
        "ping" => (Reply::json(jsonrpc::result(id_text, "{}")), String::new(), "ok"),
        "tools/list" => list(node, id_text, params, Kind::Tools, "tools"),
        "prompts/list" => list(node, id_text, params, Kind::Prompts, "prompts"),
        "resources/list" => list(node, id_text, params, Kind::Resources, "resources"),
        "resources/templates/list" => {
            list(node, id_text, params, Kind::ResourceTemplates, "resourceTemplates")
        }
        "logging/setLevel" => set_level(session, id_text, params),
        "completion/complete" => utilities::complete(id_text, params),
        "resources/subscribe" | "resources/unsubscribe" => utilities::subscription(id_text, params),
        "tools/call" | "resources/read" | "prompts/get" => {
            return runtime_bound(node, session, id, method, params, accepts, started).await;
        }
        _ => (
            Reply::error(id_text, METHOD_NOT_FOUND, &format!("method not found: {method}")),
            String::new(),
            "error",
        ),
    };
    node.metrics.record(method, &package, outcome, started.elapsed().as_secs_f64());
    reply
}

fn list(
    node: &Node,
    id: &str,
    params: Option<&RawValue>,
    kind: Kind,
    field: &str,
) -> (Reply, String, &'static str) {
    #[derive(Deserialize, Default)]
    struct Params {
        #[serde(default)]
        cursor: Option<String>,
    }
    let params: Params =
        params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or_default();
    let offset = match params.cursor.as_deref().map(decode_cursor) {
        None => 0,
        Some(Some(offset)) => offset,
        Some(None) => {
            return (Reply::error(id, INVALID_PARAMS, "invalid cursor"), String::new(), "error");
        }
    };
    let catalog = node.catalog();
    let policy = node.policy();
    let page = node.settings.page_size;
    let mut visible = catalog.visible(kind, &policy).skip(offset);
    let items: Vec<&Value> = visible.by_ref().take(page).collect();
    let mut body = Map::new();
    body.insert(field.to_owned(), json!(items));
    if visible.next().is_some() {
        body.insert("nextCursor".into(), json!(B64.encode(format!("o:{}", offset + page))));
    }
    let result = serde_json::to_string(&body).unwrap_or_else(|_| "{}".into());
    (Reply::json(jsonrpc::result(id, &result)), String::new(), "ok")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = B64.decode(cursor).ok()?;
    std::str::from_utf8(&raw).ok()?.strip_prefix("o:")?.parse().ok()
}

fn set_level(
    session: &Session,
    id: &str,
    params: Option<&RawValue>,
) -> (Reply, String, &'static str) {
    #[derive(Deserialize)]
    struct Params {
        level: String,
    }
    let level = params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok()).map(|p| p.level);
    match level.as_deref().and_then(log_level_rank) {
        Some(rank) => {
            session.log_level.store(rank, Ordering::Relaxed);
            (Reply::json(jsonrpc::result(id, "{}")), String::new(), "ok")
        }
        None => (
            Reply::error(
                id,
                INVALID_PARAMS,
                "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
            ),
            String::new(),
            "error",
        ),
    }
}

#[derive(Deserialize)]
struct NamedParams<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Box<RawValue>>,
}

/// `tools/call`, `resources/read`, `prompts/get`: check the target exists and is not
/// blocked, take an in-flight slot, and hand the call to the runtime.
async fn runtime_bound(
    node: &Arc<Node>,
    session: &Arc<Session>,
    id: &RawValue,
    method: &str,
    params: Option<&RawValue>,
    accepts: Accepts,
    started: Instant,
) -> Reply {
    let id_text = id.get();
    let Some(params) = params.and_then(|p| serde_json::from_str::<NamedParams>(p.get()).ok())
    else {
        node.metrics.record(method, "", "error", started.elapsed().as_secs_f64());
        return Reply::error(id_text, INVALID_PARAMS, "missing or malformed params");
    };
    let catalog = node.catalog();
    let policy = node.policy();
    let target = match method {
        "resources/read" => params.uri.as_deref(),
        _ => params.name.as_deref(),
    };
    let Some(target) = target else {
        let field = if method == "resources/read" { "uri" } else { "name" };
        node.metrics.record(method, "", "error", started.elapsed().as_secs_f64());
        return Reply::error(id_text, INVALID_PARAMS, &format!("params.{field} is required"));
    };
    let package = match method {
        "tools/call" => catalog.tool_package(target),
        "prompts/get" => catalog.prompt_package(target),
        _ => catalog.resource_package(target),
    };
    let hidden = package.is_some_and(|p| match method {
        "tools/call" => policy.tool_hidden(p, target),
        _ => policy.package_hidden(p),
    });
    if hidden {
        node.metrics.blocked_calls.inc();
        node.metrics.record(
            method,
            package.unwrap_or_default(),
            "blocked",
            started.elapsed().as_secs_f64(),
        );
        let what = if method == "resources/read" {
            "resource"
        } else if method == "prompts/get" {
            "prompt"
        } else {
            "tool"
        };
        return Reply::error(
            id_text,
            METHOD_NOT_FOUND,
            &format!("{what} `{target}` is blocked on this environment"),
        );
    }
    let request = calls::RuntimeRequest {
        op: match method {
            "tools/call" => "call_tool",
            "prompts/get" => "get_prompt",
            _ => "read_resource",
        },
        target_field: if method == "resources/read" { "uri" } else { "name" },
        target: target.to_owned(),
        arguments: params.arguments.map(|a| a.get().to_owned()),
        progress_token: params
            .meta
            .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
            .and_then(|m| m.progress_token),
        meta: params.meta.map(|m| m.get().to_owned()),
        client: session.client.clone(),
    };
    calls::run(
        node,
        session,
        id,
        method,
        package.unwrap_or_default().to_owned(),
        request,
        accepts,
        started,
    )
    .await
}
