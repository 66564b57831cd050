//! The 2026-07-28 request envelope: what every stateless request must carry in `params._meta`
//! (protocol version, client capabilities; client info and log level optionally) and the
//! HTTP headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
//! Checked in the order the specification's error table implies, so each refusal names the
//! one thing that is wrong.

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderName, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::mcp::http::VERSION_HEADER;
use crate::mcp::jsonrpc::INVALID_PARAMS;
use crate::mcp::session::log_level_rank;

pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// Revisions served statelessly (per-request `_meta`), newest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// The request params the node reads, borrowed from the body. Unknown fields are ignored
/// (the spec's "ignore extra params").
#[derive(Deserialize, Default)]
pub struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    pub meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub uri: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub cursor: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub notifications: Option<&'a RawValue>,
    #[serde(rename = "inputResponses", borrow, default)]
    pub input_responses: Option<&'a RawValue>,
    #[serde(rename = "requestState", borrow, default)]
    pub request_state: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow, default)]
    log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

/// A validated envelope.
pub struct Envelope<'a> {
    /// `_meta` verbatim (passed to the runtime: progress token, fastmcp version selection…).
    pub meta: &'a RawValue,
    pub version: String,
    pub capabilities: &'a RawValue,
    pub client_info: Option<&'a RawValue>,
    /// Minimum rank of `notifications/message` the client asked for; `None` = no logs at all.
    pub log_level: Option<u8>,
    pub progress_token: Option<Box<RawValue>>,
}

impl Envelope<'_> {
    /// `{"protocolVersion","capabilities","clientInfo"}` for the runtime (no session id: a
    /// stateless request belongs to no session).
    pub fn client_json(&self) -> String {
        let info = self.client_info.map_or("{}", RawValue::get);
        let capabilities = self.capabilities.get();
        // Sized once (this is built for every stateless call).
        let mut out =
            String::with_capacity(64 + 2 * self.version.len() + capabilities.len() + info.len());
        out.push_str(r#"{"protocolVersion":"#);
        match serde_json::to_string(&self.version) {
            Ok(version) => out.push_str(&version),
            Err(_) => out.push_str(r#""""#),
        }
        out.push_str(r#","capabilities":"#);
        out.push_str(capabilities);
        out.push_str(r#","clientInfo":"#);
        out.push_str(info);
        out.push('}');
        out
    }
}

/// Why a request was refused before dispatch: HTTP status, JSON-RPC code, message, data.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Refusal {
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), data: None }
    }

    fn params(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, INVALID_PARAMS, message)
    }

    fn mismatch(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, HEADER_MISMATCH, message)
    }
}

/// Whether a request belongs to the 2026-07-28 era: its `_meta` names a protocol version,
/// or its `MCP-Protocol-Version` header is a modern revision, or its method exists only
/// there. Everything else (initialize, session traffic) is served as 2025-11-25.
pub fn is_modern(headers: &HeaderMap, method: &str, params: Option<&RawValue>) -> bool {
    if matches!(method, "server/discover" | "subscriptions/listen") {
        return true;
    }
    if method != "initialize"
        && header(headers, &PROTOCOL_VERSION).is_some_and(|v| MODERN_VERSIONS.contains(&v))
    {
        return true;
    }
    // Cheap test first: most legacy params carry no such key at all. A prebuilt searcher:
    // `str::contains` sets up its two-way search for this 39-byte key on every call, which
    // cost more than the search itself on a session's every request.
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(PROTOCOL_VERSION_KEY));
    params.is_some_and(|p| KEY.find(p.get().as_bytes()).is_some() && meta_names_version(p))
}

fn meta_names_version(params: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct OnlyMeta<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    serde_json::from_str::<OnlyMeta>(params.get())
        .ok()
        .and_then(|p| p.meta)
        .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
        .is_some_and(|m| m.protocol_version.is_some())
}

// The names made once: a lookup by `&str` parses the name first (~300 instructions).
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(VERSION_HEADER);
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

pub fn header<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Checks `_meta` and the mirrored headers of a request with `method` and `params`.
pub fn validate<'a>(
    headers: &HeaderMap,
    method: &str,
    params: &Params<'a>,
) -> Result<Envelope<'a>, Refusal> {
    let Some(raw_meta) = params.meta else {
        return Err(Refusal::params(format!(
            "params._meta is required: a 2026-07-28 request carries {PROTOCOL_VERSION_KEY} and \
             io.modelcontextprotocol/clientCapabilities"
        )));
    };
    let meta: Meta = serde_json::from_str(raw_meta.get())
        .map_err(|e| Refusal::params(format!("params._meta must be an object: {e}")))?;
    let version: String = meta
        .protocol_version
        .and_then(|v| serde_json::from_str(v.get()).ok())
        .ok_or_else(|| {
            Refusal::params(format!(
                "params._meta[{PROTOCOL_VERSION_KEY:?}] (a string) is required"
            ))
        })?;
    match header(headers, &PROTOCOL_VERSION) {
        None => {
            return Err(Refusal::mismatch("the MCP-Protocol-Version header is required"));
        }
        Some(value) if value != version => {
            return Err(Refusal::mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value {value:?} does not match body value {version:?}"
            )));
        }
        Some(_) => {}
    }
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        let mut refusal = Refusal::new(
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_VERSION,
            format!(
                "Unsupported protocol version {version:?}; supported: {} (and 2025-11-25, 2025-06-18, \
                 2025-03-26 through initialize)",
                MODERN_VERSIONS.join(", ")
            ),
        );
        refusal.data =
            Some(serde_json::json!({"supported": MODERN_VERSIONS, "requested": version}));
        return Err(refusal);
    }
    let capabilities = meta
        .client_capabilities
        .filter(|c| c.get().trim_start().starts_with('{'))
        .ok_or_else(|| {
        Refusal::params(
            "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] (an object) is required",
        )
    })?;
    let log_level = match meta.log_level {
        None => None,
        Some(raw) => {
            let level: Option<String> = serde_json::from_str(raw.get()).ok();
            let rank = level.as_deref().and_then(log_level_rank);
            Some(rank.ok_or_else(|| {
                Refusal::params(format!(
                    "io.modelcontextprotocol/logLevel {} is not one of debug, info, notice, warning, \
                     error, critical, alert, emergency",
                    raw.get()
                ))
            })?)
        }
    };
    check_method_headers(headers, method, params)?;
    Ok(Envelope {
        meta: raw_meta,
        version,
        capabilities,
        client_info: meta.client_info,
        log_level,
        progress_token: meta.progress_token.map(|t| t.to_owned()),
    })
}

/// `Mcp-Method` always; `Mcp-Name` for the methods that name a target.
fn check_method_headers(headers: &HeaderMap, method: &str, params: &Params) -> Result<(), Refusal> {
    match header(headers, &MCP_METHOD) {
        None => return Err(Refusal::mismatch("the Mcp-Method header is required")),
        Some(value) if value != method => {
            return Err(Refusal::mismatch(format!(
                "Header mismatch: Mcp-Method header value {value:?} does not match body value {method:?}"
            )));
        }
        Some(_) => {}
    }
    let (field, target) = match method {
        "tools/call" | "prompts/get" => ("name", params.name.as_deref()),
        "resources/read" => ("uri", params.uri.as_deref()),
        _ => return Ok(()),
    };
    let Some(target) = target else {
        return Err(Refusal::params(format!("params.{field} (a string) is required")));
    };
    let Some(raw) = header(headers, &MCP_NAME) else {
        return Err(Refusal::mismatch(format!(
            "the Mcp-Name header is required for {method} (it mirrors params.{field})"
        )));
    };
    let value = decode_header_value(raw).ok_or_else(|| {
        Refusal::mismatch(format!("Mcp-Name header value {raw:?} is not valid Base64"))
    })?;
    if value != target {
        return Err(Refusal::mismatch(format!(
            "Header mismatch: Mcp-Name header value {value:?} does not match body value {target:?}"
        )));
    }
    Ok(())
}

/// A header value as sent (`us-west1`) or in the Base64 sentinel form
/// (`=?base64?dXMtd2VzdDE=?=`); `None` for a sentinel whose payload is not strict Base64 of
/// UTF-8 (bad padding, foreign characters).
pub fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    let Some(encoded) = raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Some(Cow::Borrowed(raw));
    };
    let bytes = STANDARD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn params(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn check(
        pairs: &[(&'static str, &str)],
        method: &str,
        body: &str,
    ) -> Result<(), (StatusCode, i64)> {
        let raw = params(body);
        let parsed: Params = serde_json::from_str(raw.get()).unwrap();
        validate(&headers(pairs), method, &parsed).map(|_| ()).map_err(|r| (r.status, r.code))
    }

    #[test]
    fn modern_requests_are_recognized_by_meta_header_or_method() {
        let none = HeaderMap::new();
        let with_meta = params(&format!(r#"{{"_meta":{META}}}"#));
        assert!(is_modern(&none, "tools/list", Some(&with_meta)));
        assert!(!is_modern(&none, "tools/list", Some(&params(r#"{"_meta":{"progressToken":1}}"#))));
        assert!(!is_modern(&none, "tools/list", None));
        assert!(is_modern(&none, "server/discover", None));
        let modern = headers(&[("mcp-protocol-version", "2026-07-28")]);
        assert!(is_modern(&modern, "tools/list", None));
        assert!(
            !is_modern(&modern, "initialize", None),
            "initialize without the envelope is legacy"
        );
        assert!(is_modern(&none, "initialize", Some(&with_meta)), "initialize with it is not");
        let legacy = headers(&[("mcp-protocol-version", "2025-11-25")]);
        assert!(!is_modern(&legacy, "tools/list", None));
    }

    #[test]
    fn envelope_rules_in_order() {
        let ok = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list")];
        let body = format!(r#"{{"_meta":{META}}}"#);
        assert_eq!(check(&ok, "tools/list", &body), Ok(()));
        let bad = (StatusCode::BAD_REQUEST, INVALID_PARAMS);
        assert_eq!(check(&ok, "tools/list", "{}"), Err(bad), "no _meta");
        let no_version = r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#;
        assert_eq!(check(&ok, "tools/list", no_version), Err(bad));
        let no_caps = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert_eq!(check(&ok, "tools/list", no_caps), Err(bad));
        let mismatch = (StatusCode::BAD_REQUEST, HEADER_MISMATCH);
        assert_eq!(check(&[("mcp-method", "tools/list")], "tools/list", &body), Err(mismatch));
        assert_eq!(check(&[ok[0]], "tools/list", &body), Err(mismatch), "no Mcp-Method");
        assert_eq!(
            check(&[ok[0], ("mcp-method", "TOOLS/LIST")], "tools/list", &body),
            Err(mismatch),
            "values are case-sensitive"
        );
        let future = body.replace("2026-07-28", "2099-01-01");
        assert_eq!(
            check(&[("mcp-protocol-version", "2099-01-01"), ok[1]], "tools/list", &future),
            Err((StatusCode::BAD_REQUEST, UNSUPPORTED_VERSION))
        );
        assert_eq!(check(&ok, "tools/list", &future), Err(mismatch), "header and body disagree");
        let loud = body.replace("{}}", r#"{},"io.modelcontextprotocol/logLevel":"loud"}"#);
        assert_eq!(check(&ok, "tools/list", &loud), Err(bad));
    }

    #[test]
    fn mcp_name_mirrors_the_target_plain_padded_or_base64() {
        let call = |name_header: Option<&str>| {
            let mut pairs =
                vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")];
            if let Some(value) = name_header {
                pairs.push(("mcp-name", value));
            }
            check(&pairs, "tools/call", &format!(r#"{{"name":"héllo","_meta":{META}}}"#))
        };
        let mismatch = Err((StatusCode::BAD_REQUEST, HEADER_MISMATCH));
        assert_eq!(call(None), mismatch);
        assert_eq!(call(Some("other")), mismatch);
        let encoded = format!("=?base64?{}?=", STANDARD.encode("héllo"));
        assert_eq!(call(Some(&encoded)), Ok(()));
        assert_eq!(call(Some("=?base64?aMOpbGxv=?=")), mismatch, "bad padding is not valid Base64");
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("SGVsbG8=").as_deref(), Some("SGVsbG8="), "no sentinel");
    }
}
