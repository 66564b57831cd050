//! MCP methods on an established session. Lists are answered by the node from its catalog;
//! calls, reads and prompt renders go to the runtime after the policy allows them. The list
//! pages and the runtime-bound path are shared with stateless 2026-07-28 requests
//! (`modern`).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::calls::{self, Accepts, Reply, Scope};
use super::jsonrpc::{self, INVALID_PARAMS, METHOD_NOT_FOUND};
use super::session::{Session, log_level_rank};
use super::utilities;
use crate::catalog::Kind;
use crate::node::Node;
use crate::policy::CallerId;
use ramen_call_records::Outcome;

/// Answers one request of an initialized session.
pub async fn dispatch(
    node: &Arc<Node>,
    session: &Arc<Session>,
    caller: &CallerId,
    id: &RawValue,
    method: &str,
    params: Option<&RawValue>,
    accepts: Accepts,
) -> Reply {
    let started = Instant::now();
    let id_text = id.get();
    let (reply, package, outcome) = match method {
        "ping" => (Reply::json(jsonrpc::result(id_text, "{}")), String::new(), "ok"),
        "tools/list" => list(node, caller, id_text, params, Kind::Tools, "tools"),
        "prompts/list" => list(node, caller, id_text, params, Kind::Prompts, "prompts"),
        "resources/list" => list(node, caller, id_text, params, Kind::Resources, "resources"),
        "resources/templates/list" => {
            list(node, caller, id_text, params, Kind::ResourceTemplates, "resourceTemplates")
        }
        "logging/setLevel" => set_level(session, id_text, params),
        "completion/complete" => utilities::complete(id_text, params),
        "resources/subscribe" | "resources/unsubscribe" => utilities::subscription(id_text, params),
        "tools/call" | "resources/read" | "prompts/get" => {
            let request = (id, method, params);
            return runtime_bound(node, session, caller, request, accepts, started).await;
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
    caller: &CallerId,
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
    match list_page(node, caller, params.cursor.as_deref(), kind, field, |_, _| {}) {
        Ok(result) => (Reply::json(jsonrpc::result(id, &result)), String::new(), "ok"),
        Err(message) => (Reply::error(id, INVALID_PARAMS, message), String::new(), "error"),
    }
}

/// One page of a list as callers may see it, as JSON: `{<field>: [...], "nextCursor"?}` and
/// whatever `finish` adds. `finish` is told whether the answer is not the packages' whole
/// list, or may differ between callers (the environment has rules): this environment's or
/// this caller's view, not one to share.
///
/// The catalog's entries are written from where they are, borrowed: turning them into a
/// `Value` first would copy every tool's schema on every list, then free it again (most of
/// what a `tools/list` cost).
pub(crate) fn list_page(
    node: &Node,
    caller: &CallerId,
    cursor: Option<&str>,
    kind: Kind,
    field: &str,
    finish: impl FnOnce(&mut Map<String, Value>, bool),
) -> Result<String, &'static str> {
    let offset = match cursor.map(decode_cursor) {
        None => 0,
        Some(Some(offset)) => offset,
        Some(None) => return Err("invalid cursor"),
    };
    let catalog = node.catalog();
    let policy = node.policy();
    let page = node.settings.page_size;
    let grant = policy.grant(caller);
    let filtered =
        policy.has_rules() || catalog.visible(kind, &policy, &grant).count() < catalog.count(kind);
    let mut visible = catalog.visible(kind, &policy, &grant).skip(offset);
    let items: Vec<&Value> = visible.by_ref().take(page).collect();
    let mut body = Map::new();
    // A placeholder where the map orders the items; `PageJson` writes them in its stead.
    body.insert(field.to_owned(), Value::Null);
    if visible.next().is_some() {
        body.insert("nextCursor".into(), json!(B64.encode(format!("o:{}", offset + page))));
    }
    finish(&mut body, filtered);
    let json = PageJson { body: &body, field, items: &items };
    Ok(serde_json::to_string(&json).unwrap_or_else(|_| "{}".into()))
}

/// A page's body with the borrowed catalog entries in place of `field`'s placeholder: the
/// same bytes as the body holding copies of them.
struct PageJson<'a> {
    body: &'a Map<String, Value>,
    field: &'a str,
    items: &'a [&'a Value],
}

impl serde::Serialize for PageJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.body.len()))?;
        for (key, value) in self.body {
            if key == self.field {
                map.serialize_entry(key, self.items)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
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

/// `tools/call`, `resources/read`, `prompts/get` of a session.
async fn runtime_bound(
    node: &Arc<Node>,
    session: &Arc<Session>,
    caller: &CallerId,
    (id, method, params): (&RawValue, &str, Option<&RawValue>),
    accepts: Accepts,
    started: Instant,
) -> Reply {
    let id_text = id.get();
    let Some(params) = params.and_then(|p| serde_json::from_str::<NamedParams>(p.get()).ok())
    else {
        node.metrics.record(method, "", "error", started.elapsed().as_secs_f64());
        return Reply::error(id_text, INVALID_PARAMS, "missing or malformed params");
    };
    let target = match method {
        "resources/read" => params.uri.as_deref(),
        _ => params.name.as_deref(),
    };
    let Some(target) = target else {
        let field = if method == "resources/read" { "uri" } else { "name" };
        node.metrics.record(method, "", "error", started.elapsed().as_secs_f64());
        return Reply::error(id_text, INVALID_PARAMS, &format!("params.{field} is required"));
    };
    let call = Target {
        target,
        arguments: params.arguments,
        meta: params.meta,
        progress_token: params
            .meta
            .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
            .and_then(|m| m.progress_token),
        client: session.client.clone(),
        caller,
        input: None,
    };
    call_runtime(node, Scope::Session(session.clone()), id, method, call, accepts, started, |_| {
        Ok(())
    })
    .await
}

/// What a runtime-bound request names and carries.
pub(crate) struct Target<'a> {
    pub target: &'a str,
    pub arguments: Option<&'a RawValue>,
    pub meta: Option<&'a RawValue>,
    pub progress_token: Option<Box<RawValue>>,
    pub client: String,
    /// Who is calling: what it may use, and what the tool is told of it.
    pub caller: &'a CallerId,
    pub input: Option<String>,
}

/// Checks the target exists and is not blocked, lets `check` look at the catalog entry
/// (2026-07-28: `Mcp-Param-*` headers against the tool's schema), takes an in-flight slot
/// and hands the call to the runtime.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call_runtime(
    node: &Arc<Node>,
    scope: Scope,
    id: &RawValue,
    method: &str,
    call: Target<'_>,
    accepts: Accepts,
    started: Instant,
    check: impl FnOnce(&crate::catalog::Catalog) -> Result<(), Reply>,
) -> Reply {
    let id_text = id.get();
    let catalog = node.catalog();
    let policy = node.policy();
    let target = call.target;
    let package = match method {
        "tools/call" => catalog.tool_package(target),
        "prompts/get" => catalog.prompt_package(target),
        _ => catalog.resource_package(target),
    };
    let hidden = package.is_some_and(|p| match method {
        "tools/call" => policy.tool_hidden(p, target),
        _ => policy.package_hidden(p),
    });
    let note = node.calls.note(node, call.caller, method, target, call.arguments);
    let grant = policy.grant(call.caller);
    let refused = !hidden
        && package.is_some_and(|p| match method {
            "resources/read" => !grant.package(p),
            _ => !grant.name(p, target),
        });
    // Counted by tool only when the catalog serves it: the label stays bounded.
    let tool = (method == "tools/call" && package.is_some()).then_some(target);
    if refused {
        node.metrics.record_call(
            method,
            package.unwrap_or_default(),
            tool,
            "refused",
            started.elapsed().as_secs_f64(),
        );
        let reply = Reply::error(
            id_text,
            METHOD_NOT_FOUND,
            &ramen_call_rules::not_available_message(method, target),
        );
        calls::record_reply(node, note, started, Outcome::Refused, &reply);
        return reply;
    }
    if hidden {
        node.metrics.blocked_calls.inc();
        node.metrics.record_call(
            method,
            package.unwrap_or_default(),
            tool,
            "blocked",
            started.elapsed().as_secs_f64(),
        );
        let reply = Reply::error(id_text, METHOD_NOT_FOUND, &blocked_message(method, target));
        calls::record_reply(node, note, started, Outcome::Blocked, &reply);
        return reply;
    }
    if let Err(refused) = check(&catalog) {
        node.metrics.record_call(
            method,
            package.unwrap_or_default(),
            tool,
            "error",
            started.elapsed().as_secs_f64(),
        );
        calls::record_reply(node, note, started, Outcome::Error, &refused);
        return refused;
    }
    let request = calls::RuntimeRequest {
        op: match method {
            "tools/call" => "call_tool",
            "prompts/get" => "get_prompt",
            _ => "read_resource",
        },
        target_field: if method == "resources/read" { "uri" } else { "name" },
        target: target.to_owned(),
        arguments: call.arguments.map(|a| a.get().to_owned()),
        progress_token: call.progress_token,
        meta: call.meta.map(|m| m.get().to_owned()),
        client: call.client,
        caller: call.caller.frame(),
        input: call.input,
    };
    calls::run(
        node,
        scope,
        id,
        method,
        package.unwrap_or_default().to_owned(),
        tool.map(str::to_owned),
        request,
        accepts,
        started,
        note,
    )
    .await
}

/// The answer to a blocked target (-32601, the product's rule), the same from node and edge.
pub fn blocked_message(method: &str, target: &str) -> String {
    let what = match method {
        "resources/read" => "resource",
        "prompts/get" => "prompt",
        _ => "tool",
    };
    format!("{what} `{target}` is blocked on this environment")
}
