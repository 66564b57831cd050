//! What the edge reads from a 2026-07-28 stateless request without parsing its body: the
//! revision (`MCP-Protocol-Version`), the method (`Mcp-Method`) and the target
//! (`Mcp-Name`, possibly in the `=?base64?…?=` form). The node checks the headers against
//! the body (a mismatch is -32020), so refusing by header is safe; a request of another
//! revision is never judged by its headers (the spec's advice for intermediaries).

use std::borrow::Cow;
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use memchr::memmem;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::directory::Blocked;
use crate::proxy::SESSION_NAME;

/// Session-based revisions: requests of these (or with no version header) are not stateless.
const SESSION_REVISIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

// The names made once: a lookup by `&str` parses the name first (~300 instructions).
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

fn header<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// A request that belongs to no session: a stateless revision's version header, no
/// `Mcp-Session-Id`.
pub fn is_stateless(headers: &HeaderMap) -> bool {
    !headers.contains_key(&SESSION_NAME)
        && header(headers, &PROTOCOL_VERSION).is_some_and(|v| !SESSION_REVISIONS.contains(&v))
}

/// The message for a blocked target, or `None`. Tools are blocked by name or package,
/// prompts by package; resources name no package, so the node decides for them.
pub fn blocked_target(headers: &HeaderMap, blocked: &Blocked) -> Option<String> {
    if blocked.is_empty() {
        return None;
    }
    let method = header(headers, &MCP_METHOD)?;
    let name = decode(header(headers, &MCP_NAME)?)?;
    match method {
        "tools/call" if blocked.covers(&name) => {
            Some(format!("tool `{name}` is blocked on this environment"))
        }
        "prompts/get" if blocked.covers_package_of(&name) => {
            Some(format!("prompt `{name}` is blocked on this environment"))
        }
        _ => None,
    }
}

/// What a stateless `tools/call`, `prompts/get` or `resources/read` names: (its method, the
/// name or URI), from its `Mcp-Method` and `Mcp-Name`.
pub fn named_target(headers: &HeaderMap) -> Option<(&str, String)> {
    let method = header(headers, &MCP_METHOD)?;
    ramen_call_rules::target_kind(method)?;
    Some((method, decode(header(headers, &MCP_NAME)?)?.into_owned()))
}

fn decode(raw: &str) -> Option<Cow<'_, str>> {
    let Some(encoded) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Some(Cow::Borrowed(raw));
    };
    String::from_utf8(STANDARD.decode(encoded).ok()?).ok().map(Cow::Owned)
}

/// The node holding the call a retry resumes: a `params.requestState` the node issued
/// (`r1.<token>.<node id>`) names it. `None` for first rounds and for states of the
/// package's own (any node can resume those).
pub fn waiting_on(body: &[u8]) -> Option<String> {
    // Cheap test first: nearly every request carries no state at all. A SIMD search, built
    // once: comparing each window of the body cost ~4k instructions per stateless call.
    static STATE_KEY: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"requestState\""));
    STATE_KEY.find(body)?;
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "requestState", borrow, default)]
        request_state: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow, default)]
        params: Option<Params<'a>>,
    }
    let body: Body = serde_json::from_slice(body).ok()?;
    let state = body.params?.request_state?;
    let (token, node) = state.strip_prefix("r1.")?.split_once('.')?;
    (token.len() == 32 && !node.is_empty()).then(|| node.to_owned())
}

/// The JSON-RPC id of a request body (raw JSON), `null` when it cannot be read.
pub fn request_id(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    serde_json::from_slice::<Id>(body)
        .ok()
        .and_then(|i| i.id.map(|id| id.get().to_owned()))
        .unwrap_or_else(|| "null".into())
}

#[cfg(test)]
mod properties {
    use http::HeaderValue;
    use proptest::prelude::*;

    use super::*;

    fn with(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        pairs
            .iter()
            .filter_map(|(k, v)| {
                Some((http::HeaderName::from_static(k), HeaderValue::from_bytes(v).ok()?))
            })
            .collect()
    }

    proptest! {
        /// Any header bytes: no panic; stateless exactly when the version is not a session
        /// revision and no session id is sent.
        #[test]
        fn any_version_header_is_judged(version in proptest::collection::vec(any::<u8>(), 0..40), session in any::<bool>()) {
            let mut pairs: Vec<(&'static str, &[u8])> = vec![("mcp-protocol-version", &version)];
            if session {
                pairs.push(("mcp-session-id", b"s-1"));
            }
            let headers = with(&pairs);
            let shown = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()).map(str::trim);
            let expected = !session && shown.is_some_and(|v| !SESSION_REVISIONS.contains(&v));
            prop_assert_eq!(is_stateless(&headers), expected);
        }

        /// A blocked tool is refused whether its name comes plain or base64-encoded; nothing
        /// else is, and the message names it.
        #[test]
        fn blocking_by_header_matches_the_list(package in "[a-z]{1,8}", tool in "[a-z_]{1,8}", other in "[a-z]{1,8}", encoded in any::<bool>()) {
            let blocked = Blocked::new([package.clone()]);
            let name = format!("{package}.{tool}");
            let sent = if encoded { format!("=?base64?{}?=", STANDARD.encode(&name)) } else { name.clone() };
            let headers = with(&[("mcp-method", b"tools/call"), ("mcp-name", sent.as_bytes())]);
            let refused = blocked_target(&headers, &blocked);
            prop_assert!(refused.as_deref().is_some_and(|m| m.contains(&name)), "{refused:?}");
            prop_assume!(other != package);
            let free = format!("{other}.{tool}");
            let headers = with(&[("mcp-method", b"tools/call"), ("mcp-name", free.as_bytes())]);
            prop_assert_eq!(blocked_target(&headers, &blocked), None);
        }

        /// Any name header (bad base64 included): no panic.
        #[test]
        fn any_name_header_is_judged(method in prop_oneof![Just(b"tools/call".to_vec()), Just(b"prompts/get".to_vec()), proptest::collection::vec(any::<u8>(), 0..16)],
                                     name in proptest::collection::vec(any::<u8>(), 0..64)) {
            let blocked = Blocked::new(["a".to_owned()]);
            let _ = blocked_target(&with(&[("mcp-method", &method), ("mcp-name", &name)]), &blocked);
        }

        /// Any body: no panic reading the id or the waiting node.
        #[test]
        fn any_body_is_read_safely(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = waiting_on(&body);
            let id = request_id(&body);
            prop_assert!(!id.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    #[test]
    fn stateless_by_version_header_and_no_session() {
        assert!(is_stateless(&headers(&[("mcp-protocol-version", "2026-07-28")])));
        assert!(
            is_stateless(&headers(&[("mcp-protocol-version", "2099-01-01")])),
            "the node answers -32022"
        );
        assert!(!is_stateless(&headers(&[("mcp-protocol-version", "2025-11-25")])));
        assert!(!is_stateless(&headers(&[])), "initialize carries no version header");
        let both = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-session-id", "s")]);
        assert!(!is_stateless(&both));
    }

    #[test]
    fn blocked_tools_and_prompts_by_header() {
        let blocked = Blocked::new(["weather".to_owned(), "notes.add".to_owned()]);
        let call = |method: &str, name: &str| {
            let h = headers(&[("mcp-method", method), ("mcp-name", name)]);
            blocked_target(&h, &blocked).is_some()
        };
        assert!(call("tools/call", "notes.add"));
        assert!(call("tools/call", "=?base64?bm90ZXMuYWRk?="), "decoded first");
        assert!(call("tools/call", "weather.forecast"));
        assert!(!call("tools/call", "notes.divide"));
        assert!(call("prompts/get", "weather.plan_trip"));
        assert!(!call("resources/read", "weather://cities"), "resources: the node decides");
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":"a-1","method":"x"}"#), r#""a-1""#);
        let retry = br#"{"id":2,"method":"tools/call","params":{"name":"t","requestState":"r1.0123456789abcdef0123456789abcdef.b-1"}}"#;
        assert_eq!(waiting_on(retry).as_deref(), Some("b-1"));
        assert_eq!(
            waiting_on(br#"{"params":{"requestState":"eyJzdGF0ZSI6MX0.sig"}}"#),
            None,
            "the package's own"
        );
        assert_eq!(waiting_on(br#"{"params":{"name":"t"}}"#), None);
        assert_eq!(request_id(b"{nope"), "null");
    }
}
