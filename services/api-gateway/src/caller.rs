//! Who is calling. The access token (HS256 JWT from auth) comes from, in order:
//! 1. `Authorization: Bearer <token>` (CLI, scripts);
//! 2. the `ramen_access` cookie (the console): HttpOnly, SameSite=Strict, `Secure` when the
//!    gateway is reached over TLS. Requests that change state on this path must also send the
//!    `ramen_csrf` cookie's value in `x-csrf-token` (double submit): a page on another origin
//!    can make the browser send the cookie, but cannot read it to set the header;
//! 3. `?t=<token>`, only on streaming routes (SSE / WebSocket clients cannot set headers).
//!
//! The token is verified here with the signing keys (the current one and, during a rotation,
//! the previous one); role checks then go to auth (`access.rs`), which also refuses a token
//! whose session was signed out or ended by a password change.

use std::net::IpAddr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use subtle::ConstantTimeEq;

use crate::clients::Caller;
use crate::error::ApiError;
use crate::request_id::RequestId;
use crate::state::Gateway;

pub const ACCESS_COOKIE: &str = "ramen_access";
pub const REFRESH_COOKIE: &str = "ramen_refresh";
pub const CSRF_COOKIE: &str = "ramen_csrf";
pub const CSRF_HEADER: &str = "x-csrf-token";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Bearer,
    Cookie,
    Query,
}

/// A caller whose access token verified.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub user_id: String,
    pub email: String,
    pub must_change_password: bool,
    /// The token's session (`sid`): auth refuses it once the session ended.
    pub session_id: String,
    pub via: Via,
}

pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, value)| *key == name && !value.is_empty())
        .map(|(_, value)| value)
}

fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The presented access token and where it came from.
pub fn presented_token(parts: &Parts, streaming: bool) -> Result<Option<(String, Via)>, ApiError> {
    if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
        let value = value.to_str().unwrap_or_default().trim();
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty())
            .ok_or_else(|| {
                ApiError::unauthenticated("Authorization must be `Bearer <access token>`")
            })?;
        return Ok(Some((token.to_owned(), Via::Bearer)));
    }
    if let Some(token) = cookie(&parts.headers, ACCESS_COOKIE) {
        return Ok(Some((token.to_owned(), Via::Cookie)));
    }
    match query_param(parts.uri.query(), "t") {
        Some(token) if streaming => Ok(Some((token.to_owned(), Via::Query))),
        Some(_) => Err(ApiError::unauthenticated(
            "`?t=` is accepted only on streaming routes; send `Authorization: Bearer <access token>`",
        )),
        None => Ok(None),
    }
}

/// Double-submit check for state-changing requests authenticated by the cookie.
pub fn check_csrf(parts: &Parts, via: Via) -> Result<(), ApiError> {
    if via != Via::Cookie || matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    csrf_matches(&parts.headers)
}

/// The `x-csrf-token` header equals the `ramen_csrf` cookie (both set).
pub fn csrf_matches(headers: &HeaderMap) -> Result<(), ApiError> {
    let header = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let cookie = cookie(headers, CSRF_COOKIE).unwrap_or_default();
    if header.is_empty()
        || cookie.is_empty()
        || !bool::from(header.as_bytes().ct_eq(cookie.as_bytes()))
    {
        let message = format!(
            "cookie sessions must send the `{CSRF_COOKIE}` cookie's value in `{CSRF_HEADER}`"
        );
        return Err(ApiError::new(axum::http::StatusCode::FORBIDDEN, "csrf", message));
    }
    Ok(())
}

fn now_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
        as i64
}

/// Verifies the presented token; `None` when there is none.
pub fn authenticate(
    gateway: &Gateway,
    parts: &Parts,
    streaming: bool,
) -> Result<Option<SignedIn>, ApiError> {
    let Some((token, via)) = presented_token(parts, streaming)? else { return Ok(None) };
    let claims = gateway
        .tokens()
        .verify(&token, now_s())
        .map_err(|e| ApiError::unauthenticated(e.to_string()))?;
    check_csrf(parts, via)?;
    Ok(Some(SignedIn {
        user_id: claims.sub,
        email: claims.email,
        must_change_password: claims.mcp,
        session_id: claims.sid,
        via,
    }))
}

fn request_id(parts: &Parts) -> String {
    parts.extensions.get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default()
}

/// An authenticated handler's user and the caller its gRPC calls are made as (the user with
/// the grants auth answered when the access layer authorized the request).
pub struct Authed {
    pub caller: SignedIn,
    pub call: Caller,
}

impl<S: Send + Sync> FromRequestParts<S> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Put there by the access layer, which every non-public route has.
        let caller = parts
            .extensions
            .get::<SignedIn>()
            .cloned()
            .ok_or_else(|| ApiError::unauthenticated("sign in first"))?;
        let call = parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| Caller::new(caller.user_id.clone(), request_id(parts)));
        Ok(Self { caller, call })
    }
}

/// A public handler's gRPC context (no actor) and client address.
pub struct Anonymous {
    pub call: Caller,
    pub addr: IpAddr,
}

impl FromRequestParts<Gateway> for Anonymous {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        gateway: &Gateway,
    ) -> Result<Self, Self::Rejection> {
        let addr = crate::client_addr::from_parts(parts, gateway)?;
        Ok(Self { call: Caller::new(String::new(), request_id(parts)), addr })
    }
}

/// The client address of any handler.
pub struct ClientAddr(pub IpAddr);

impl FromRequestParts<Gateway> for ClientAddr {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        gateway: &Gateway,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self(crate::client_addr::from_parts(parts, gateway)?))
    }
}

/// `Set-Cookie` values for a new session.
pub fn session_cookies(
    secure: bool,
    access: (&str, i64),
    refresh: (&str, i64),
    csrf: &str,
) -> Vec<HeaderValue> {
    vec![
        set_cookie(ACCESS_COOKIE, access.0, "/", access.1, true, secure),
        set_cookie(REFRESH_COOKIE, refresh.0, "/api/auth", refresh.1, true, secure),
        // Readable by the console's script, which echoes it in `x-csrf-token`.
        set_cookie(CSRF_COOKIE, csrf, "/", refresh.1, false, secure),
    ]
}

pub fn cleared_cookies(secure: bool) -> Vec<HeaderValue> {
    vec![
        set_cookie(ACCESS_COOKIE, "", "/", 0, true, secure),
        set_cookie(REFRESH_COOKIE, "", "/api/auth", 0, true, secure),
        set_cookie(CSRF_COOKIE, "", "/", 0, false, secure),
    ]
}

fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age_s: i64,
    http_only: bool,
    secure: bool,
) -> HeaderValue {
    let mut cookie =
        format!("{name}={value}; Path={path}; Max-Age={}; SameSite=Strict", max_age_s.max(0));
    if http_only {
        cookie.push_str("; HttpOnly");
    }
    if secure {
        cookie.push_str("; Secure");
    }
    // Tokens are base64url and dots: always a valid header value.
    HeaderValue::from_str(&cookie)
        .unwrap_or_else(|_| HeaderValue::from_static("invalid=; Max-Age=0"))
}

#[cfg(test)]
#[path = "caller_tests.rs"]
mod tests;
