//! The access every route declares (in the route table) and the layer that enforces it before
//! the handler runs — before the body is even parsed, so a caller who may not see a group
//! learns nothing from validation errors either.
//!
//! Every authenticated request asks auth's `Authorize` once rather than trusting roles copied
//! into the token: a removed member or a demoted admin loses access at once, not when their
//! token expires, and auth also knows which groups exist (404 for a group nobody registered).
//! Auth also refuses the token there once its session ended (logout, a password change): the
//! store it reads is the one every replica reads, so that holds at once everywhere, at no
//! extra round trip. The answer carries the user's grants, which go on as the caller of every gRPC call the
//! handler makes (a signed ticket, `ramen-access`): the service that serves it applies the
//! same rule to the same grants without asking auth again. The signature and expiry of the
//! access token are checked locally (`caller.rs`), so anonymous and forged requests never reach
//! auth.

use axum::extract::{RawPathParams, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ramen_clients::grants;
use ramen_proto::auth::v1::{Action, AuthorizeRequest, Decision, GetGrantsRequest};

use crate::caller::{SignedIn, authenticate};
use crate::clients::Caller;
use crate::error::ApiError;
use crate::request_id::RequestId;
use crate::state::Gateway;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone (health, info, login, refresh, bootstrap status).
    Public,
    /// Any signed-in user.
    Authenticated,
    /// Members of the `{group}` in the path (and super admins): reading the group.
    Member,
    /// Admins of the `{group}` (and super admins), for this action.
    GroupAdmin(Action),
    /// Super admins only, on the `{group}`: members and admins get 403, others 404.
    GroupSuperAdmin(Action),
    /// Super admins only; nothing group-scoped.
    SuperAdmin,
}

impl Access {
    /// The `Authorize` question this access asks, with whether it is about `{group}`.
    pub fn action(self) -> Option<(Action, bool)> {
        match self {
            Access::Public | Access::Authenticated => None,
            Access::Member => Some((Action::ReadGroup, true)),
            Access::GroupAdmin(action) | Access::GroupSuperAdmin(action) => Some((action, true)),
            Access::SuperAdmin => Some((Action::Admin, false)),
        }
    }

    pub fn is_group_scoped(self) -> bool {
        self.action().is_some_and(|(_, scoped)| scoped)
    }

    /// How the OpenAPI document names it (`x-ramen-access`).
    pub fn describe(self) -> String {
        let action = |a: Action| a.as_str_name().trim_start_matches("ACTION_").to_ascii_lowercase();
        match self {
            Access::Public => "public".into(),
            Access::Authenticated => "authenticated".into(),
            Access::Member => "member of {group}".into(),
            Access::GroupAdmin(a) => format!("admin of {{group}} ({})", action(a)),
            Access::GroupSuperAdmin(a) => format!("super admin, on {{group}} ({})", action(a)),
            Access::SuperAdmin => "super admin".into(),
        }
    }
}

/// A route's access rules, as the layer sees them.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub access: Access,
    /// Accepts the access token as `?t=`.
    pub streaming: bool,
    /// Open to a session that must still change its one-time password.
    pub pending_ok: bool,
    /// The route's operation declares a request body; one that does not takes none (or `{}`).
    pub takes_body: bool,
}

pub async fn enforce(
    State((gateway, policy)): State<(Gateway, Policy)>,
    request: Request,
    next: Next,
) -> Response {
    match admit(&gateway, policy, request).await {
        Ok(request) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// The request as the route may see it: its body held to the route's document, then its
/// caller checked.
async fn admit(gateway: &Gateway, policy: Policy, request: Request) -> Result<Request, ApiError> {
    let request = if policy.takes_body { request } else { no_body(request).await? };
    check(gateway, policy, request).await
}

/// A route whose document declares no request body refuses one: nothing, or `{}` (what the
/// console and the CLI send to a bodiless POST), is accepted; anything else is a 400 rather
/// than silently ignored.
async fn no_body(request: Request) -> Result<Request, ApiError> {
    let headers = request.headers();
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0");
    if !declared && !headers.contains_key(axum::http::header::TRANSFER_ENCODING) {
        return Ok(request);
    }
    let refused = || ApiError::invalid("this route takes no request body (send none, or `{}`)");
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1024).await.map_err(|_| refused())?;
    let empty = bytes.iter().all(u8::is_ascii_whitespace)
        || serde_json::from_slice::<serde_json::Value>(&bytes)
            .is_ok_and(|v| v.as_object().is_some_and(serde_json::Map::is_empty));
    if !empty {
        return Err(refused());
    }
    Ok(Request::from_parts(parts, axum::body::Body::empty()))
}

async fn check(gateway: &Gateway, policy: Policy, request: Request) -> Result<Request, ApiError> {
    if policy.access == Access::Public {
        return Ok(request);
    }
    let (mut parts, body) = request.into_parts();
    let caller = authenticate(gateway, &parts, policy.streaming)?
        .ok_or_else(|| ApiError::unauthenticated("sign in first: no access token was presented"))?;
    if caller.must_change_password && !policy.pending_ok {
        return Err(ApiError::password_change_required());
    }
    crate::contract::check_path(&mut parts).await?;
    let request_id = parts.extensions.get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default();
    let call = match policy.access.action() {
        Some((action, scoped)) => {
            let group = if scoped { group_of(&mut parts).await? } else { String::new() };
            authorize(gateway, &caller, &group, action, request_id).await?
        }
        None => signed_in(gateway, &caller, request_id).await?,
    };
    parts.extensions.insert(call);
    parts.extensions.insert(caller);
    Ok(Request::from_parts(parts, body))
}

async fn group_of(parts: &mut axum::http::request::Parts) -> Result<String, ApiError> {
    use axum::extract::FromRequestParts;
    let params = RawPathParams::from_request_parts(parts, &())
        .await
        .map_err(|_| ApiError::internal("route has no path parameters"))?;
    let group = params.iter().find(|(name, _)| *name == "group").map(|(_, value)| value.to_owned());
    group.ok_or_else(|| ApiError::internal("a group-scoped route without a {group} parameter"))
}

/// Routes open to every signed-in user: what they hold, for the services to decide on.
async fn signed_in(
    gateway: &Gateway,
    caller: &SignedIn,
    request_id: String,
) -> Result<Caller, ApiError> {
    let call = Caller::new(caller.user_id.clone(), request_id.clone());
    let question =
        GetGrantsRequest { user_id: caller.user_id.clone(), session_id: caller.session_id.clone() };
    let answer =
        gateway.clients().auth.clone().get_grants(call.request(question)).await?.into_inner();
    Ok(Caller::user(caller.user_id.clone(), request_id, grants(&answer)))
}

/// Asks auth whether the user may do `action` on `group`, and answers the caller the
/// handler's gRPC calls are made as.
async fn authorize(
    gateway: &Gateway,
    caller: &SignedIn,
    group: &str,
    action: Action,
    request_id: String,
) -> Result<Caller, ApiError> {
    let call = Caller::new(caller.user_id.clone(), request_id.clone());
    let question = AuthorizeRequest {
        user_id: caller.user_id.clone(),
        group: group.to_owned(),
        action: action as i32,
        session_id: caller.session_id.clone(),
    };
    let answer =
        gateway.clients().auth.clone().authorize(call.request(question)).await?.into_inner();
    match answer.decision() {
        Decision::Allow => Ok(Caller::user(caller.user_id.clone(), request_id, grants(&answer))),
        // Same words as for a group that does not exist: nothing is revealed.
        Decision::NotFound => Err(ApiError::not_found(format!("group `{group}` not found"))),
        _ => Err(ApiError::forbidden(match action {
            Action::ReadGroup => "you may not read this group".to_owned(),
            _ if answer.super_admin => "not allowed".to_owned(),
            _ => "this needs a group admin or a super admin".to_owned(),
        })),
    }
}
