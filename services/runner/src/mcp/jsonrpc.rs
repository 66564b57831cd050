//! JSON-RPC 2.0 as MCP uses it: one message per POST, ids echoed verbatim, results spliced
//! in as raw JSON so the runtime's answer is never parsed and re-serialized by the node.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Node-defined: the node is at its in-flight cap (HTTP 503 + `Retry-After`); retry.
pub const OVERLOADED: i64 = -32000;

/// A message from the client, borrowed from the request body.
#[derive(Debug)]
pub enum Incoming<'a> {
    Request {
        id: &'a RawValue,
        /// Borrowed from the body unless it had escapes (`"tools\/call"` is `tools/call`).
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// The client's answer to a request the server sent it (sampling, elicitation).
    Response {
        id: &'a RawValue,
        result: Option<&'a RawValue>,
        error: Option<&'a RawValue>,
    },
}

#[derive(Debug, PartialEq)]
pub enum ParseError {
    /// Not JSON at all (-32700).
    Json(String),
    /// JSON, but not a valid JSON-RPC message (-32600); the id when one could be read.
    Invalid { reason: String, id: Option<String> },
}

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// How deep a message may nest. Parameters and results are captured as raw JSON, which serde
/// does not depth-limit, and passed on to the Python runtime, whose parser recurses: a body
/// nested 100,000 deep would exhaust its stack. 128 is serde_json's own limit for values.
pub const MAX_DEPTH: usize = 128;

pub fn parse(body: &[u8]) -> Result<Incoming<'_>, ParseError> {
    if let Some(at) = nesting_past(body, MAX_DEPTH) {
        return Err(ParseError::Json(format!(
            "JSON nested deeper than {MAX_DEPTH} levels (at byte {at})"
        )));
    }
    // UTF-8 checked once for the whole body, so serde checks no string again (as it does
    // reading bytes: each string, and each raw value once more; ~1k instructions a call).
    let body = std::str::from_utf8(body)
        .map_err(|e| ParseError::Json(format!("the body is not UTF-8: {e}")))?;
    if body.trim_ascii_start().starts_with('[') {
        // Batches existed only in 2025-03-26 and no official client sends them.
        serde_json::from_str::<&RawValue>(body).map_err(|e| ParseError::Json(e.to_string()))?;
        return Err(invalid("batches are not supported; send one JSON-RPC message per POST", None));
    }
    let raw: Raw<'_> = serde_json::from_str(body).map_err(|e| {
        if e.is_data() {
            invalid(&format!("not a JSON-RPC object: {e}"), None)
        } else {
            ParseError::Json(e.to_string())
        }
    })?;
    let id = raw.id;
    // Copied only for an error that names it.
    let id_text = || id.map(|i| i.get().to_owned());
    if raw.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err(invalid("`jsonrpc` must be \"2.0\"", id_text()));
    }
    if let Some(id) = id {
        let text = id.get();
        let is_string = text.starts_with('"');
        let is_integer =
            text.bytes().enumerate().all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'));
        if !(is_string || is_integer) || text == "-" {
            return Err(invalid("`id` must be a string or an integer", None));
        }
    }
    match (raw.method, id) {
        (Some(method), _) => {
            let method = match serde_json::from_str::<&str>(method.get()) {
                Ok(method) => Cow::Borrowed(method),
                // Escaped: unescaped into a string of its own (serde cannot borrow it).
                Err(_) => serde_json::from_str::<String>(method.get())
                    .map(Cow::Owned)
                    .map_err(|_| invalid("`method` must be a string", id_text()))?,
            };
            if let Some(params) = raw.params
                && !params.get().starts_with(['{', '['])
            {
                return Err(invalid("`params` must be an object", id_text()));
            }
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params: raw.params },
                None => Incoming::Notification { method, params: raw.params },
            })
        }
        (None, Some(id)) if raw.result.is_some() || raw.error.is_some() => {
            Ok(Incoming::Response { id, result: raw.result, error: raw.error })
        }
        _ => Err(invalid(
            "a message needs a `method`, or an `id` with `result` or `error`",
            id_text(),
        )),
    }
}

fn invalid(reason: &str, id: Option<String>) -> ParseError {
    ParseError::Invalid { reason: reason.to_owned(), id }
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`.
pub fn result(id: &str, result: &str) -> String {
    let mut out = String::with_capacity(36 + id.len() + result.len());
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(id);
    out.push_str(r#","result":"#);
    out.push_str(result);
    out.push('}');
    out
}

/// `{"jsonrpc":"2.0","id":<id or null>,"error":{code,message[,data]}}`.
pub fn error(
    id: Option<&str>,
    code: i64,
    message: &str,
    data: Option<&serde_json::Value>,
) -> String {
    let mut error = serde_json::json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data.clone();
    }
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#, id.unwrap_or("null"), error)
}

/// A notification from server to client.
pub fn notification(method: &str, params: Option<&str>) -> String {
    match params {
        Some(params) => format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#),
        None => format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#),
    }
}

/// The offset of the bracket that opens level `limit + 1`, if any: one pass over the bytes,
/// brackets inside strings not counted. Malformed JSON is left to the parser. Strings (most
/// of a request's bytes) are skipped to their closing quote with `memchr`, not byte by byte.
fn nesting_past(body: &[u8], limit: usize) -> Option<usize> {
    let (mut depth, mut at) = (0usize, 0usize);
    while at < body.len() {
        match body[at] {
            b'"' => {
                at += 1;
                loop {
                    // An unterminated string holds everything after it: no bracket counts.
                    let found = memchr::memchr2(b'"', b'\\', body.get(at..)?)?;
                    at += found;
                    if body[at] == b'"' {
                        break;
                    }
                    at += 2; // a backslash and the character it escapes
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(at);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn json_value() -> impl Strategy<Value = Value> {
        const KEYS: &[&str] = &["jsonrpc", "id", "method", "params", "result", "error"];
        crate::mcp::json_values::json_value(KEYS, &[])
    }

    fn check(body: &[u8]) -> Result<(), TestCaseError> {
        match parse(body) {
            Ok(Incoming::Request { id, method, .. }) => {
                let value: Value = serde_json::from_slice(body).unwrap();
                prop_assert_eq!(value["method"].as_str(), Some(&*method));
                prop_assert!(
                    value["id"].is_string() || value["id"].is_i64() || value["id"].is_u64(),
                    "{}",
                    id.get()
                );
            }
            Ok(_) => {}
            Err(ParseError::Json(reason)) => prop_assert!(!reason.is_empty()),
            Err(ParseError::Invalid { reason, .. }) => prop_assert!(!reason.is_empty()),
        }
        Ok(())
    }

    proptest! {
        /// Any bytes: no panic, and a refusal says why.
        #[test]
        fn any_bytes_are_judged(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            check(&body)?;
        }

        /// Any JSON (objects with the JSON-RPC keys or others, arrays for batches): no panic; a
        /// request is what the body says it is.
        #[test]
        fn any_json_is_judged(value in json_value()) {
            check(value.to_string().as_bytes())?;
        }

        /// Every well-formed request parses to itself.
        #[test]
        fn requests_parse(id in prop_oneof![any::<i64>().prop_map(Value::from), any::<String>().prop_map(Value::from)],
                          method in any::<String>(), key in any::<String>(), arg in any::<String>()) {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {key: arg}}).to_string();
            match parse(body.as_bytes()) {
                Ok(Incoming::Request { id: got, method: m, params }) => {
                    prop_assert_eq!(serde_json::from_str::<Value>(got.get()).unwrap(), id);
                    prop_assert_eq!(&*m, method.as_str());
                    prop_assert!(params.is_some());
                }
                other => prop_assert!(false, "{other:?}"),
            }
        }
    }

    /// Nesting up to the limit parses; one level more is refused, wherever it is (brackets
    /// inside strings do not count).
    #[test]
    fn nesting_is_limited_at_max_depth() {
        let message = |depth: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{}1{},"s":"[[[{{"}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        // The message itself and `params` are two levels.
        assert!(parse(message(MAX_DEPTH - 2).as_bytes()).is_ok());
        match parse(message(MAX_DEPTH - 1).as_bytes()) {
            Err(ParseError::Json(reason)) => {
                assert!(reason.contains("deeper than 128"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        let escaped = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"s":"\"{}"}}}}"#,
            "[".repeat(500)
        );
        assert!(
            parse(escaped.as_bytes()).is_ok(),
            "brackets after an escaped quote are in the string"
        );
    }

    /// Deeply nested JSON (a stack-exhaustion attempt) is refused, not followed.
    #[test]
    fn deep_nesting_is_refused() {
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            // Closed, so the JSON is well formed and only its depth is wrong.
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{}1{}}}}}"#,
                open.repeat(100_000),
                close.repeat(100_000)
            );
            assert!(matches!(parse(body.as_bytes()), Err(ParseError::Json(_))), "{open}");
            let batch = "[".repeat(100_000) + &"]".repeat(100_000);
            assert!(matches!(parse(batch.as_bytes()), Err(ParseError::Json(_))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#;
        assert!(
            matches!(parse(body), Ok(Incoming::Request { method, .. }) if method == "tools/list")
        );
        // An encoder that escapes `/` (PHP's json_encode does) sends the same method.
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools\/list"}"#;
        assert!(
            matches!(parse(body), Ok(Incoming::Request { method, .. }) if method == "tools/list")
        );
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(matches!(parse(body), Ok(Incoming::Notification { .. })));
        let body = br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#;
        assert!(matches!(parse(body), Ok(Incoming::Response { .. })));
    }

    #[test]
    fn rejects_what_is_not_json_rpc() {
        assert!(matches!(parse(b"{nope"), Err(ParseError::Json(_))));
        assert!(matches!(parse(b"42"), Err(ParseError::Invalid { .. })));
        assert!(matches!(parse(br#"{"id":1,"method":"ping"}"#), Err(ParseError::Invalid { .. })));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":3}"#),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(
            parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Err(ParseError::Invalid { .. })
        ));
        let Err(ParseError::Invalid { id, .. }) =
            parse(br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#)
        else {
            panic!()
        };
        assert_eq!(id.as_deref(), Some("\"a\""));
    }

    #[test]
    fn builds_responses() {
        assert_eq!(result("3", "{}"), r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        let e: serde_json::Value =
            serde_json::from_str(&error(None, PARSE_ERROR, "bad", None)).unwrap();
        assert_eq!(e["error"]["code"], PARSE_ERROR);
        assert!(e["id"].is_null());
    }
}
