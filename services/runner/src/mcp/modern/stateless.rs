//! What a call into the runtime does differently when it answers a stateless 2026-07-28
//! request: results carry `resultType` (and `resources/read` its cache hints), the retired
//! `-32002` becomes `-32602`, and a tool's request to the client never goes out as a
//! request: `ping` is answered at once, anything needing a capability the request did not
//! declare ends the call with -32021 (HTTP 400), and a declared one is asked the 2026-07-28
//! way — the call waits (`park`) and the response is an `InputRequiredResult`.

use std::borrow::Cow;

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::envelope::{HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_VERSION};
use super::park::Question;
use crate::mcp::jsonrpc::METHOD_NOT_FOUND;
use crate::node::Node;
use crate::runtime::RpcError;

/// The resource-not-found code of 2025-11-25 and earlier (the runtime's).
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;

/// What the node knows of a stateless request and its client.
#[derive(Debug, Default)]
pub struct Stateless {
    /// Minimum rank of `notifications/message` to pass on; `None`: the request asked for none.
    pub log_level: Option<u8>,
    /// `io.modelcontextprotocol/clientCapabilities`, raw.
    pub capabilities: String,
    /// The tool, prompt or resource the request names (a retry must name the same).
    pub target: String,
    /// Who sent it: a digest of its `Authorization` header (a retry must come from the same).
    pub principal: String,
}

/// What became of a tool's request to the client.
pub enum Asked {
    /// The node answered it (ping) or refused it to the tool.
    Answered,
    /// The client lacks the capability: the call ends with this error.
    Refused(RpcError),
    /// The client can answer: ask it (the call waits).
    Client(Question),
}

/// The HTTP status of a stateless error answer.
pub fn error_status(code: i64) -> StatusCode {
    match code {
        MISSING_CLIENT_CAPABILITY | HEADER_MISMATCH | UNSUPPORTED_VERSION => {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::OK,
    }
}

/// A runtime result as a 2026-07-28 result: `resultType` first (unless the package set one,
/// e.g. its own `input_required`), and for `resources/read` the cache hints a read needs —
/// `ttlMs: 0`, `private`, since package code decides what a read returns.
pub fn shape_result<'a>(method: &str, raw: &'a str) -> Cow<'a, str> {
    if raw.contains("\"resultType\"") && has_result_type(raw) {
        return Cow::Borrowed(raw);
    }
    let fields = if method == "resources/read" {
        r#""resultType":"complete","ttlMs":0,"cacheScope":"private""#
    } else {
        r#""resultType":"complete""#
    };
    Cow::Owned(inject(raw, fields))
}

fn has_result_type(raw: &str) -> bool {
    #[derive(Deserialize)]
    struct Top<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<&'a RawValue>,
    }
    serde_json::from_str::<Top>(raw).is_ok_and(|t| t.result_type.is_some())
}

/// `{"a":1}` + `"x":2` → `{"x":2,"a":1}`, without parsing the object.
pub fn inject(raw: &str, fields: &str) -> String {
    let Some(rest) = raw.trim_start().strip_prefix('{') else { return raw.to_owned() };
    let mut out = String::with_capacity(raw.len() + fields.len() + 2);
    out.push('{');
    out.push_str(fields);
    if !rest.trim_start().starts_with('}') {
        out.push(',');
    }
    out.push_str(rest);
    out
}

#[derive(Deserialize)]
struct ToolRequest {
    method: String,
    #[serde(default)]
    params: Map<String, Value>,
}

/// The capability a server→client request needs, as `requiredCapabilities` names it.
fn required_capability(method: &str, params: &Map<String, Value>) -> Option<Value> {
    match method {
        "sampling/createMessage" if params.contains_key("tools") => {
            Some(json!({"sampling": {"tools": {}}}))
        }
        "sampling/createMessage" => Some(json!({"sampling": {}})),
        "elicitation/create" if params.get("mode").and_then(Value::as_str) == Some("url") => {
            Some(json!({"elicitation": {"url": {}}}))
        }
        "elicitation/create" => Some(json!({"elicitation": {}})),
        "roots/list" => Some(json!({"roots": {}})),
        _ => None,
    }
}

/// Whether `declared` (the client's capabilities) covers `required`: every key of
/// `required` is present, recursively (`elicitation: {}` covers form mode only when it has
/// no `url` requirement; an empty `elicitation` object means form).
fn covers(declared: &Value, required: &Value) -> bool {
    let (Some(declared), Some(required)) = (declared.as_object(), required.as_object()) else {
        return true;
    };
    required.iter().all(|(key, inner)| {
        declared
            .get(key)
            .is_some_and(|d| inner.as_object().is_none_or(|i| i.is_empty()) || covers(d, inner))
    })
}

/// Decides what a tool's request to the client of a stateless call becomes.
pub fn server_request(node: &Node, scope: &Stateless, rid: u64, request: &RawValue) -> Asked {
    let Ok(message) = serde_json::from_str::<ToolRequest>(request.get()) else {
        let error = RpcError::new(METHOD_NOT_FOUND, "malformed request from the tool");
        node.runtime.respond(rid, Err(&error));
        return Asked::Answered;
    };
    if message.method == "ping" {
        let empty = RawValue::from_string("{}".into()).expect("valid JSON");
        node.runtime.respond(rid, Ok(&empty));
        return Asked::Answered;
    }
    let Some(required) = required_capability(&message.method, &message.params) else {
        let error = RpcError::new(
            METHOD_NOT_FOUND,
            format!("{} is not a request a server can make of a client", message.method),
        );
        node.runtime.respond(rid, Err(&error));
        return Asked::Answered;
    };
    let declared: Value = serde_json::from_str(&scope.capabilities).unwrap_or(Value::Null);
    if !covers(&declared, &required) {
        let names: Vec<&str> =
            required.as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        let error = RpcError {
            code: MISSING_CLIENT_CAPABILITY,
            message: format!(
                "the tool sent {} but the request's io.modelcontextprotocol/clientCapabilities do \
                 not declare {}",
                message.method,
                names.join(", ")
            ),
            data: Some(json!({ "requiredCapabilities": required })),
        };
        node.runtime.respond(rid, Err(&error));
        return Asked::Refused(error);
    }
    Asked::Client(Question { rid, method: message.method, params: message.params })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_get_a_result_type_once() {
        assert_eq!(
            shape_result("tools/call", r#"{"content":[]}"#),
            r#"{"resultType":"complete","content":[]}"#
        );
        assert_eq!(shape_result("tools/call", "{}"), r#"{"resultType":"complete"}"#);
        let own = r#"{"resultType":"input_required","requestState":"x"}"#;
        assert_eq!(shape_result("tools/call", own), own);
        let mention = r#"{"content":[{"type":"text","text":"\"resultType\" is new"}]}"#;
        assert!(shape_result("tools/call", mention).starts_with(r#"{"resultType":"complete","#));
        let read = shape_result("resources/read", r#"{"contents":[]}"#);
        assert_eq!(
            read,
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[]}"#
        );
    }

    #[test]
    fn capability_coverage() {
        let need = |m: &str, p: Value| required_capability(m, p.as_object().unwrap()).unwrap();
        let elicit = need("elicitation/create", json!({"message": "?"}));
        let url = need("elicitation/create", json!({"mode": "url"}));
        assert!(covers(&json!({"elicitation": {}}), &elicit));
        assert!(!covers(&json!({}), &elicit));
        assert!(!covers(&json!({"elicitation": {}}), &url));
        assert!(covers(&json!({"elicitation": {"url": {}}}), &url));
        assert!(!covers(&json!({"elicitation": {}}), &need("sampling/createMessage", json!({}))));
        assert!(covers(&json!({"roots": {"listChanged": true}}), &need("roots/list", json!({}))));
    }
}
