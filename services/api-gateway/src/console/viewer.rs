//! Who is looking at a page. A page needs the session cookie; the user and their memberships
//! come from `GET /api/auth/me` (through the API, like every read). What a page *offers* (a
//! button, a form) follows the one rule, `ramen_access::Caller::decide`, over those grants —
//! the function every service decides with, not a copy of it — and the API still decides
//! every call the button makes.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use ramen_access::{Caller, Grants, Role};
use ramen_proto::auth::v1::{Action, Decision};

use super::Console;
use super::api::{Ctx, enc};
use super::model::{Me, Membership, User};
use crate::caller::{ACCESS_COOKIE, cookie};

/// Sent by the console's script when it fetches a fragment: answer 401, not a redirect.
pub const FRAGMENT_HEADER: &str = "x-console-fragment";

pub struct Viewer {
    pub user: User,
    pub memberships: Vec<Membership>,
    pub ctx: Ctx,
    caller: Caller,
}

impl Viewer {
    /// Whether the one rule allows `action` on `group` (empty for global actions) for this
    /// user: what the page offers. The API decides again when it is used.
    pub fn can(&self, group: &str, action: Action) -> bool {
        self.caller.decide(group, action) == Decision::Allow
    }

    pub fn super_admin(&self) -> bool {
        self.user.super_admin
    }

    /// The groups the viewer belongs to (super admins see every group through the API).
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.memberships.iter().map(|m| m.group.as_str())
    }
}

fn grants(me: &Me) -> Grants {
    let user = me.user.as_ref();
    let groups = me
        .memberships
        .iter()
        .filter_map(|m| {
            let role = match m.role.as_deref() {
                Some("admin") => Role::Admin,
                Some("member") => Role::Member,
                _ => return None,
            };
            Some((m.group.clone(), role))
        })
        .collect();
    Grants {
        super_admin: user.is_some_and(|u| u.super_admin),
        must_change_password: user.is_some_and(|u| u.must_change_password),
        groups,
    }
}

/// Where the sign-in page sends the user back to.
fn next_of(parts: &Parts) -> String {
    parts.uri.path_and_query().map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned())
}

fn sign_in(parts: &Parts) -> Response {
    if parts.headers.contains_key(FRAGMENT_HEADER) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    Redirect::to(&format!("/sign-in?next={}", enc(&next_of(parts)))).into_response()
}

impl FromRequestParts<Console> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Console) -> Result<Self, Response> {
        if cookie(&parts.headers, ACCESS_COOKIE).is_none() {
            // An expired access cookie is gone from the jar; the sign-in page resumes the
            // session with the refresh cookie (its script tries that first).
            return Err(sign_in(parts));
        }
        let ctx = Ctx::from_parts(parts);
        let me: Me = match console.api.get(&ctx, "/api/auth/me").await {
            Ok(me) => me,
            Err(f) if f.status == StatusCode::UNAUTHORIZED => return Err(sign_in(parts)),
            Err(f) => return Err(super::layout::bare_error(&f)),
        };
        let caller = Caller::user(
            me.user.as_ref().map(|u| u.id.clone()).unwrap_or_default(),
            "",
            grants(&me),
        );
        let user = me.user.unwrap_or_default();
        if user.must_change_password && parts.uri.path() != "/password" {
            let to = format!("/password?next={}", enc(&next_of(parts)));
            return Err(Redirect::to(&to).into_response());
        }
        Ok(Viewer { user, memberships: me.memberships, ctx, caller })
    }
}
