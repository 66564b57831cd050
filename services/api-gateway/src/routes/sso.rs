//! `/api/auth/sso*`: people signing in with the organisation's OpenID provider. Auth runs the
//! flow and keeps its secrets; the gateway binds it to the browser that started it — the
//! `ramen_sso` cookie holds the flow's state, and a callback whose state is not that cookie's
//! is refused before auth sees it, so nobody can finish their own sign-in in someone else's
//! browser (login CSRF) or use a callback URL they did not start.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use ramen_proto::auth::v1 as pb;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::auth::{session, session_parts};
use super::{Route, route};
use crate::access::Access;
use crate::caller::{Anonymous, cookie};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonOnly, Params};
use crate::state::Gateway;

/// Holds the flow's state between the start and the callback.
pub const SSO_COOKIE: &str = "ramen_sso";
/// As long as auth keeps a flow.
const SSO_COOKIE_SECONDS: u32 = 600;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Public, routes!(options)),
        route(Access::Public, routes!(start)),
        route(Access::Public, routes!(callback)),
        route(Access::Public, routes!(redeem)),
    ]
}

#[derive(Serialize, ToSchema)]
pub struct SignInOptionsView {
    /// Single sign-on is configured.
    pub enabled: bool,
    /// The sign-in button's words.
    pub button: String,
    /// False when local passwords are turned off.
    pub password_sign_in: bool,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StartQuery {
    /// Console: the same-origin path to land on afterwards.
    #[serde(default)]
    pub next: String,
    /// CLI: the loopback port the flow ends at (`http://127.0.0.1:<port>/callback`).
    #[param(minimum = 1, maximum = 65535)]
    pub cli_port: Option<u32>,
    /// CLI, with `cli_port`: the S256 challenge of the verifier it will redeem the code with.
    #[serde(default)]
    #[param(pattern = "^[A-Za-z0-9_-]{43}$")]
    pub code_challenge: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub code: String,
    /// RFC 9207.
    #[serde(default)]
    pub iss: String,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub error_description: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemBody {
    /// The one-time code the flow sent to the CLI's loopback.
    pub code: String,
    /// The verifier whose S256 challenge the CLI started with.
    pub code_verifier: String,
}

fn sso_cookie(state: &str, max_age: u32, secure: bool) -> HeaderValue {
    // Lax, not Strict: the callback is a top-level navigation from the provider's site.
    let mut value = format!(
        "{SSO_COOKIE}={state}; Path=/api/auth/sso; Max-Age={max_age}; SameSite=Lax; HttpOnly"
    );
    if secure {
        value.push_str("; Secure");
    }
    HeaderValue::from_str(&value)
        .unwrap_or_else(|_| HeaderValue::from_static("ramen_sso=; Max-Age=0"))
}

/// How people may sign in: single sign-on (and its button), passwords.
#[utoipa::path(get, path = "/api/auth/sso", tag = "auth", responses((status = 200, body = SignInOptionsView)))]
async fn options(
    State(gateway): State<Gateway>,
    anon: Anonymous,
) -> ApiResult<Json<SignInOptionsView>> {
    let request = anon.call.request(pb::GetSignInOptionsRequest {});
    let answer = gateway.clients().auth.clone().get_sign_in_options(request).await?.into_inner();
    Ok(Json(SignInOptionsView {
        enabled: answer.sso_enabled,
        button: answer.sso_button,
        password_sign_in: answer.password_sign_in,
    }))
}

/// Starts a single sign-on: redirects to the identity provider. `next` for the console;
/// `cli_port` and `code_challenge` for `ramen login --sso`.
#[utoipa::path(get, path = "/api/auth/sso/start", tag = "auth", params(StartQuery),
    responses((status = 302, description = "To the identity provider"), (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody, description = "Single sign-on is not configured"), (status = 429, body = crate::error::ErrorBody)))]
async fn start(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    Params(query): Params<StartQuery>,
) -> ApiResult<Response> {
    gateway.limiter().sso(anon.addr).await?;
    let request = pb::StartSsoRequest {
        next: query.next,
        cli_port: query.cli_port.unwrap_or(0),
        cli_code_challenge: query.code_challenge,
        client_addr: anon.addr.to_string(),
    };
    let started =
        gateway.clients().auth.clone().start_sso(anon.call.request(request)).await?.into_inner();
    let mut response = Redirect::to(&started.authorization_url).into_response();
    let secure = gateway.settings().secure_cookies;
    response
        .headers_mut()
        .append(header::SET_COOKIE, sso_cookie(&started.state, SSO_COOKIE_SECONDS, secure));
    Ok(response)
}

/// Where the identity provider sends the browser back. A console sign-in lands signed in on
/// its `next` (or on the sign-in page with the reason); a CLI sign-in goes on to the CLI.
#[utoipa::path(get, path = "/api/auth/sso/callback", tag = "auth", params(CallbackQuery),
    responses((status = 200, description = "Signed in: the page moves on to the console"), (status = 302, description = "To the sign-in page with the reason, or to the CLI's loopback"), (status = 400, body = crate::error::ErrorBody, description = "The sign-in is unknown, used or expired"), (status = 403, body = crate::error::ErrorBody, description = "`sso_not_this_browser`: this browser did not start the sign-in (no or another `ramen_sso` cookie)"), (status = 404, body = crate::error::ErrorBody)))]
async fn callback(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    headers: HeaderMap,
    Params(query): Params<CallbackQuery>,
) -> ApiResult<Response> {
    let bound = cookie(&headers, SSO_COOKIE).unwrap_or_default();
    if query.state.is_empty()
        || bound.is_empty()
        || !bool::from(bound.as_bytes().ct_eq(query.state.as_bytes()))
    {
        // 403: the request is well formed; this browser is not the one that started it.
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "sso_not_this_browser",
            "this sign-in was not started in this browser (or its cookie expired): start it again",
        ));
    }
    let request = pb::FinishSsoRequest {
        state: query.state,
        code: query.code,
        iss: query.iss,
        error: query.error,
        error_description: query.error_description,
        client_addr: anon.addr.to_string(),
    };
    let finished =
        gateway.clients().auth.clone().finish_sso(anon.call.request(request)).await?.into_inner();
    let secure = gateway.settings().secure_cookies;
    let mut response = match (finished.session, finished.error.is_empty()) {
        (Some(signed_in), _) => {
            let target = finished.redirect;
            // A page, not a redirect: the session cookies are SameSite=Strict, and a redirect
            // chain that began at the provider's site is cross-site, so the console would not
            // see them on the next request. The page's own navigation is same-site.
            let (_, cookies) = session_parts(&gateway, signed_in);
            let html = maud::html! {
                (maud::DOCTYPE)
                meta charset="utf-8";
                meta http-equiv="refresh" content={ "0;url=" (target) };
                title { "Signed in" }
                p { "Signed in. " a href=(target) { "Continue" } }
            };
            let mut page = (
                [(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))],
                html.into_string(),
            )
                .into_response();
            for value in cookies {
                page.headers_mut().append(header::SET_COOKIE, value);
            }
            page
        }
        (None, false) => {
            let query = ramen_oauth_resource::url_form(&[("error", &finished.error)]);
            Redirect::to(&format!("/sign-in?{query}")).into_response()
        }
        (None, true) => Redirect::to(&finished.redirect).into_response(),
    };
    response.headers_mut().append(header::SET_COOKIE, sso_cookie("", 0, secure));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `ramen login --sso`: trades the one-time code its loopback received, with its PKCE
/// verifier, for a session.
#[utoipa::path(post, path = "/api/auth/sso/token", tag = "auth", request_body = RedeemBody,
    responses((status = 200, body = super::auth::SessionView), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 415, body = crate::error::ErrorBody), (status = 429, body = crate::error::ErrorBody)))]
async fn redeem(
    State(gateway): State<Gateway>,
    anon: Anonymous,
    JsonOnly(body): JsonOnly<RedeemBody>,
) -> ApiResult<Response> {
    gateway.limiter().sso(anon.addr).await?;
    let request = pb::RedeemSsoCodeRequest {
        code: body.code,
        code_verifier: body.code_verifier,
        client_addr: anon.addr.to_string(),
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .redeem_sso_code(anon.call.request(request))
        .await?
        .into_inner();
    Ok(session(&gateway, answer))
}
