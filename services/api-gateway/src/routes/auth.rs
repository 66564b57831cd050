//! `/api/auth/*`: sessions. Login and refresh answer the tokens in the body (CLI) and as
//! cookies (console); both are rate-limited per account / session and per client address.
//! Every body here must be declared `application/json` (415 otherwise): that is what keeps a
//! cross-site form from signing a browser into another account (login CSRF).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use ramen_proto::auth::v1 as pb;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{MembershipView, UserView, time};
use super::{Route, route};
use crate::access::Access;
use crate::caller::{
    Anonymous, Authed, ClientAddr, REFRESH_COOKIE, cleared_cookies, cookie, csrf_matches,
    session_cookies,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonOnly, body_error, require_json};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Public, routes!(login)),
        route(Access::Public, routes!(refresh)),
        route(Access::Public, routes!(logout)),
        route(Access::Public, routes!(bootstrap_status)),
        route(Access::Authenticated, routes!(change_password)).pending_ok(),
        route(Access::Authenticated, routes!(me)).pending_ok(),
    ]
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    pub email: String,
    pub password: String,
}

/// Omit the body to use the `ramen_refresh` cookie (then `x-csrf-token` is required).
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RefreshBody {
    #[serde(default)]
    pub refresh_token: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordBody {
    pub current_password: String,
    pub new_password: String,
}

#[derive(Serialize, ToSchema)]
pub struct SessionView {
    pub access_token: String,
    pub access_expires_at: Option<String>,
    pub refresh_token: String,
    pub refresh_expires_at: Option<String>,
    /// Echo in `x-csrf-token` on state-changing requests made with the session cookie.
    pub csrf_token: String,
    /// A one-time password was used: only `POST /api/auth/password` (and `me`) work until it is changed.
    pub must_change_password: bool,
    pub user: Option<UserView>,
}

#[derive(Serialize, ToSchema)]
pub struct BootstrapView {
    pub has_users: bool,
    pub bootstrap_password_pending: bool,
}

#[derive(Serialize, ToSchema)]
pub struct MeView {
    pub user: Option<UserView>,
    pub memberships: Vec<MembershipView>,
}

fn seconds_until(at: Option<&prost_types::Timestamp>) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    at.map_or(0, |t| t.seconds - now)
}

/// The session as JSON plus its cookies.
pub(super) fn session(gateway: &Gateway, answer: pb::LoginResponse) -> Response {
    let (view, cookies) = session_parts(gateway, answer);
    let mut response = Json(view).into_response();
    for value in cookies {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// A body that is not JSON is refused before anything else (see `require_json`).
fn json_if_any(headers: &HeaderMap, body: &Bytes) -> ApiResult<()> {
    if body.iter().all(u8::is_ascii_whitespace) { Ok(()) } else { require_json(headers) }
}

/// The refresh token from the body, or from the cookie (which then needs the CSRF header).
fn refresh_token(headers: &HeaderMap, body: &Bytes) -> ApiResult<String> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        let parsed: RefreshBody =
            serde_json::from_slice(body).map_err(|e| ApiError::invalid(body_error(&e)))?;
        if !parsed.refresh_token.is_empty() {
            return Ok(parsed.refresh_token);
        }
    }
    let token = cookie(headers, REFRESH_COOKIE).ok_or_else(|| {
        ApiError::unauthenticated("no refresh token: send `refresh_token` or the session cookie")
    })?;
    csrf_matches(headers)?;
    Ok(token.to_owned())
}

/// A new session's answer and its cookies, apart: the JSON routes send both, single sign-on's
/// callback sends the cookies with a page of its own.
pub(super) fn session_parts(
    gateway: &Gateway,
    answer: pb::LoginResponse,
) -> (SessionView, Vec<axum::http::HeaderValue>) {
    let tokens = answer.tokens.unwrap_or_default();
    let mut raw = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    let csrf = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    let cookies = session_cookies(
        gateway.settings().secure_cookies,
        (&tokens.access_token, seconds_until(tokens.access_expires_at.as_ref())),
        (&tokens.refresh_token, seconds_until(tokens.refresh_expires_at.as_ref())),
        &csrf,
    );
    let view = SessionView {
        access_expires_at: time(tokens.access_expires_at.as_ref()),
        refresh_expires_at: time(tokens.refresh_expires_at.as_ref()),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        csrf_token: csrf,
        must_change_password: answer.must_change_password,
        user: answer.user.map(UserView::from),
    };
    (view, cookies)
}

/// Signs in with email and password.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginBody,
    responses((status = 200, body = SessionView), (status = 401, body = crate::error::ErrorBody), (status = 415, body = crate::error::ErrorBody), (status = 429, body = crate::error::ErrorBody)))]
async fn login(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    JsonOnly(body): JsonOnly<LoginBody>,
) -> ApiResult<Response> {
    gateway.limiter().login(&body.email, anon.addr).await?;
    let request = pb::LoginRequest {
        email: body.email,
        password: body.password,
        client_addr: anon.addr.to_string(),
    };
    let answer =
        gateway.clients().auth.clone().login(anon.call.request(request)).await?.into_inner();
    Ok(session(&gateway, answer))
}

/// Trades a refresh token for a new session (the token is rotated; reusing an old one ends the session).
#[utoipa::path(post, path = "/api/auth/refresh", tag = "auth", request_body(content = RefreshBody, description = "Optional with the session cookie"),
    responses((status = 200, body = SessionView), (status = 401, body = crate::error::ErrorBody), (status = 415, body = crate::error::ErrorBody), (status = 429, body = crate::error::ErrorBody)))]
async fn refresh(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    json_if_any(&headers, &body)?;
    let token = refresh_token(&headers, &body)?;
    gateway.limiter().refresh(&token, anon.addr).await?;
    let request = pb::RefreshRequest { refresh_token: token, client_addr: anon.addr.to_string() };
    let answer =
        gateway.clients().auth.clone().refresh(anon.call.request(request)).await?.into_inner();
    Ok(session(&gateway, answer))
}

/// Ends the session (revokes its refresh tokens) and clears the cookies. Idempotent.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth", request_body(content = RefreshBody, description = "Optional with the session cookie"),
    responses((status = 204, description = "Signed out"), (status = 415, body = crate::error::ErrorBody)))]
async fn logout(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    json_if_any(&headers, &body)?;
    // A body, if any, is the document's `RefreshBody`: anything else is a 400, not a silent
    // "signed out" that left the session alive.
    if !body.iter().all(u8::is_ascii_whitespace) {
        serde_json::from_slice::<RefreshBody>(&body)
            .map_err(|e| ApiError::invalid(body_error(&e)))?;
    }
    if let Ok(token) = refresh_token(&headers, &body) {
        let request = pb::LogoutRequest { refresh_token: token };
        gateway.clients().auth.clone().logout(anon.call.request(request)).await?;
    }
    let mut response = axum::http::StatusCode::NO_CONTENT.into_response();
    for value in cleared_cookies(gateway.settings().secure_cookies) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// Whether any user exists and whether the bootstrap admin still has its one-time password.
#[utoipa::path(get, path = "/api/auth/bootstrap", tag = "auth", responses((status = 200, body = BootstrapView)))]
async fn bootstrap_status(
    State(gateway): State<Gateway>,
    anon: Anonymous,
) -> ApiResult<Json<BootstrapView>> {
    let answer = gateway
        .clients()
        .auth
        .clone()
        .get_bootstrap_status(anon.call.request(pb::GetBootstrapStatusRequest {}))
        .await?;
    let answer = answer.into_inner();
    Ok(Json(BootstrapView {
        has_users: answer.has_users,
        bootstrap_password_pending: answer.bootstrap_password_pending,
    }))
}

/// Changes the caller's password (required after a one-time password); other sessions end.
#[utoipa::path(post, path = "/api/auth/password", tag = "auth", request_body = PasswordBody,
    responses((status = 200, body = SessionView), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 415, body = crate::error::ErrorBody)))]
async fn change_password(
    State(gateway): State<Gateway>,
    authed: Authed,
    addr: ClientAddr,
    JsonOnly(body): JsonOnly<PasswordBody>,
) -> ApiResult<Response> {
    gateway.limiter().password_change(&authed.caller.email, addr.0).await?;
    let request = pb::ChangePasswordRequest {
        user_id: authed.caller.user_id.clone(),
        current_password: body.current_password,
        new_password: body.new_password,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .change_password(authed.call.request(request))
        .await?
        .into_inner();
    Ok(session(&gateway, answer))
}

/// The caller and their memberships.
#[utoipa::path(get, path = "/api/auth/me", tag = "auth", responses((status = 200, body = MeView)))]
async fn me(State(gateway): State<Gateway>, authed: Authed) -> ApiResult<Json<MeView>> {
    let request = pb::GetUserRequest { user_id: authed.caller.user_id.clone() };
    let answer =
        gateway.clients().auth.clone().get_user(authed.call.request(request)).await?.into_inner();
    Ok(Json(MeView {
        user: answer.user.map(UserView::from),
        memberships: answer.memberships.into_iter().map(MembershipView::from).collect(),
    }))
}
