//! An MCP endpoint as an OAuth 2.1 resource server, per the authorization chapter of the MCP
//! specification (2025-11-25, 2026-07-28):
//!
//! - [`metadata`]: the protected resource metadata (RFC 9728) a client reads after a 401, naming
//!   the resource, its authorization servers and scopes;
//! - [`Rejection::challenge`]: the `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`
//!   of that 401 (or of a 403 `insufficient_scope`);
//! - [`Verifier`]: a JWT access token checked against its issuer's keys — found through RFC 8414
//!   or OpenID discovery, cached, fetched again when a token names a key not seen yet (rotation),
//!   at most once per [`REFRESH_FLOOR`] — for its signature, `iss` (one of the accepted issuers),
//!   `exp`/`nbf`, and an `aud` naming this resource (RFC 8707), so a token minted for another
//!   server is worth nothing here; an opaque token, where the resource has a client at the
//!   issuer, through RFC 7662 introspection with the same checks.
//!
//! The token itself never leaves the verifier: callers get [`Caller`], the claims a rule or a
//! tool may use.

mod keys;
mod verify;

pub use keys::{Issuers, REFRESH_FLOOR, url_form};
pub use verify::{
    ALGORITHMS, Caller, Expect, INTROSPECTED_FOR, Rejection, Verifier, bearer, same_issuer,
};

/// RFC 9728 protected resource metadata of `resource`.
pub fn metadata(resource: &str, issuers: &[String], scopes: &[String]) -> serde_json::Value {
    serde_json::json!({
        "resource": resource,
        "authorization_servers": issuers,
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
    })
}

/// Where a resource's metadata is served (RFC 9728 §3.1): the well-known prefix inserted
/// between the host and the resource's path.
pub fn metadata_url(resource: &str) -> String {
    let (origin, path) = split_origin(resource).unwrap_or((resource, ""));
    format!("{origin}/.well-known/oauth-protected-resource{path}")
}

/// `https://host:port` and `/the/path` of a URL (the path empty when there is none), where
/// the well-known documents of RFC 8414 and RFC 9728 go in between; `None` for a non-URL.
pub(crate) fn split_origin(url: &str) -> Option<(&str, &str)> {
    let start = url.find("://")? + 3;
    Some(match url[start..].find('/') {
        Some(slash) => url.split_at(start + slash),
        None => (url, ""),
    })
}
