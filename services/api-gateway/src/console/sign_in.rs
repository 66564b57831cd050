//! Sign in (email and password; the bootstrap admin's one-time password leads to the forced
//! change) and the password change. Both forms post to the REST API (`/api/auth/login`,
//! `/api/auth/password`), which sets the session cookies.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::Console;
use super::api::Ctx;
use super::layout::{bare, form_error, noscript};
use super::model::Me;
use super::viewer::Viewer;

#[derive(Default, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
    /// Why a single sign-on failed (the callback sends the browser here with it).
    error: Option<String>,
}

/// How people may sign in (`GET /api/auth/sso`).
#[derive(Deserialize)]
struct SignInOptions {
    enabled: bool,
    button: String,
    password_sign_in: bool,
}

/// A same-origin path to go to after signing in (never another origin: `//host`, `/\host`).
pub fn safe_next(next: Option<&str>) -> String {
    ramen_service::validate::same_origin_path(next.unwrap_or_default())
}

pub async fn sign_in(
    State(console): State<Console>,
    Query(q): Query<NextQuery>,
    ctx: Ctx,
    headers: HeaderMap,
) -> Response {
    let next = safe_next(q.next.as_deref());
    // Already signed in: straight on.
    if crate::caller::cookie(&headers, crate::caller::ACCESS_COOKIE).is_some()
        && let Ok(me) = console.api.get::<Me>(&ctx, "/api/auth/me").await
        && me.user.as_ref().is_some_and(|u| !u.must_change_password)
    {
        return Redirect::to(&next).into_response();
    }
    // Without an answer, the page offers what every platform has: passwords.
    let options = console
        .api
        .get::<SignInOptions>(&ctx, "/api/auth/sso")
        .await
        .unwrap_or(SignInOptions { enabled: false, button: String::new(), password_sign_in: true });
    let sso_start =
        format!("/api/auth/sso/start?{}", ramen_oauth_resource::url_form(&[("next", &next)]));
    bare(
        "Sign in",
        StatusCode::OK,
        html! {
            h1 { "Sign in" }
            @if let Some(error) = q.error.as_deref().filter(|e| !e.is_empty()) {
                div.form-error role="alert" { "Single sign-on failed: " (error) }
            }
            @if options.enabled {
                p { a.button.primary href=(sso_start) data-sso { (options.button) } }
            }
            @if options.password_sign_in {
                (noscript())
                @if options.enabled { p.muted.small { "Or with a ramen password:" } }
                form.stack data-api="/api/auth/login" data-then="signin" data-next=(next) data-resume {
                    label { "Email" input name="email" type="email" autocomplete="username" required autofocus[!options.enabled]; }
                    label { "Password" input name="password" type="password" autocomplete="current-password" required; }
                    (form_error())
                    button type="submit" class=(if options.enabled { "" } else { "primary" }) { "Sign in" }
                }
                p.muted.small {
                    "First start? Use the email and one-time password "
                    code { "ramen up" } " printed; you will choose your own password next."
                }
            }
        },
    )
}

pub async fn password(viewer: Viewer, Query(q): Query<NextQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    let forced = viewer.user.must_change_password;
    bare(
        "Change password",
        StatusCode::OK,
        html! {
            h1 { @if forced { "Choose your password" } @else { "Change password" } }
            @if forced {
                p { "You signed in with a one-time password. Choose your own to continue; the one-time password stops working." }
            }
            p.muted.small { "Signed in as " strong { (viewer.user.email) } }
            (noscript())
            form.stack data-api="/api/auth/password" data-then=(format!("go:{next}")) {
                input type="email" name="username" value=(viewer.user.email) autocomplete="username" hidden data-skip;
                label {
                    @if forced { "One-time password" } @else { "Current password" }
                    input name="current_password" type="password" autocomplete="current-password" required;
                }
                label {
                    "New password"
                    input name="new_password" type="password" autocomplete="new-password" minlength="12" required;
                    small.hint { "At least 12 characters." }
                }
                label {
                    "Repeat the new password"
                    input name="repeat" type="password" autocomplete="new-password" data-skip data-same-as="new_password" required;
                }
                (form_error())
                button.primary type="submit" { "Save password" }
            }
            @if !forced { p { a href=(next) { "Cancel" } } }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn only_same_origin_paths_are_gone_to_after_sign_in() {
        assert_eq!(safe_next(Some("/groups/a?x=1")), "/groups/a?x=1");
        for other in ["//evil.example/", "/\\evil.example", "https://evil.example/", "groups"] {
            assert_eq!(safe_next(Some(other)), "/", "{other}");
        }
        assert_eq!(safe_next(None), "/");
    }
}
