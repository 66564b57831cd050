//! The page shell (head, navigation, the confirmation dialog) and the small pieces every page
//! is made of: status badges that carry their word, times, empty states, error notices.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::api::Failure;
use super::assets;
use super::viewer::Viewer;

/// The navigation entries; `Config` only for super admins.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Dashboard,
    Groups,
    Environments,
    Zones,
    Audit,
    Users,
    Config,
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · ramen" }
            link rel="stylesheet" href=(assets::url("console.css"));
            link rel="icon" href=(assets::url("icon.svg")) type="image/svg+xml";
            script src=(assets::url("console.js")) defer {}
        }
    }
}

fn confirm_dialog() -> Markup {
    html! {
        dialog #confirm aria-labelledby="confirm-title" {
            form method="dialog" {
                h2 #confirm-title data-title { "Are you sure?" }
                p data-text {}
                label data-typed hidden {
                    "Type " code data-expect {} " to confirm"
                    input name="typed" autocomplete="off" spellcheck="false";
                }
                div.actions {
                    button value="cancel" formnovalidate { "Cancel" }
                    button.danger value="ok" data-ok { "Confirm" }
                }
            }
        }
    }
}

/// A whole page for a signed-in viewer.
pub fn render(viewer: &Viewer, nav: Nav, title: &str, body: Markup) -> Response {
    page_status(viewer, nav, title, StatusCode::OK, body)
}

pub fn page_status(
    viewer: &Viewer,
    nav: Nav,
    title: &str,
    status: StatusCode,
    body: Markup,
) -> Response {
    let entries = [
        (Nav::Dashboard, "/dashboard", "Dashboard"),
        (Nav::Groups, "/groups", "Groups"),
        (Nav::Environments, "/environments", "Environments"),
        (Nav::Zones, "/zones", "Zones"),
        (Nav::Audit, "/audit", "Audit"),
        (Nav::Users, "/users", "Users"),
        (Nav::Config, "/config", "Config"),
    ];
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { span.logo aria-hidden="true" { "◗" } "ramen" }
                    nav aria-label="Main" {
                        ul {
                            @for (entry, href, label) in entries {
                                @if !matches!(entry, Nav::Config | Nav::Users) || viewer.super_admin() {
                                    li { a href=(href) aria-current=[(entry == nav).then_some("page")] { (label) } }
                                }
                            }
                        }
                    }
                    div.who {
                        span.email title="Signed in" { (viewer.user.email) }
                        @if viewer.super_admin() { span.badge.info { "super admin" } }
                        form data-api="/api/auth/logout" data-then="go:/sign-in" {
                            button.link type="submit" { "Sign out" }
                        }
                    }
                }
                main #main { (body) }
                (confirm_dialog())
            }
        }
    };
    respond(status, markup)
}

/// A page without navigation (sign-in, password change, errors before sign-in).
pub fn bare(title: &str, status: StatusCode, body: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main #main {
                    div.panel {
                        p.brand { span.logo aria-hidden="true" { "◗" } "ramen" }
                        (body)
                    }
                }
            }
        }
    };
    respond(status, markup)
}

pub fn bare_error(failure: &Failure) -> Response {
    bare(
        "Unavailable",
        failure.status,
        html! {
            h1 { "The console cannot reach the API" }
            p.notice.bad role="alert" { (failure.message) }
            p { a href="/" { "Try again" } }
        },
    )
}

pub fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

/// A page for a read the API refused or failed: 404 and 403 in their own words.
pub fn failure_page(viewer: &Viewer, nav: Nav, what: &str, failure: &Failure) -> Response {
    let (title, hint) = match failure.status {
        StatusCode::NOT_FOUND => ("Not found", "It does not exist, or you are not a member of it."),
        StatusCode::FORBIDDEN => ("Not allowed", "Your role does not include this page."),
        _ => ("Something went wrong", "The API answered with an error; try again shortly."),
    };
    page_status(
        viewer,
        nav,
        title,
        failure.status,
        html! {
            h1 { (title) }
            div.empty {
                p { strong { (what) } }
                p { (hint) }
                p.muted { (failure.message) }
                p { a.button href="/" { "Back to the dashboard" } }
            }
        },
    )
}

/// A notice in place of a section whose read failed.
pub fn section_failed(what: &str, failure: &Failure) -> Markup {
    html! { p.notice.bad role="alert" data-code=(failure.code) { "Could not load " (what) ": " (failure.message) } }
}

/// An empty state: what is missing and what to do next.
pub fn empty(title: &str, next: Markup) -> Markup {
    html! { div.empty { p { strong { (title) } } p { (next) } } }
}

/// The colour class of a status word; the word itself is always shown.
pub fn tone(status: &str) -> &'static str {
    match status {
        "succeeded" | "ready" | "active" | "done" | "success" | "even" | "applied" | "yes"
        | "valid" | "approved" | "ok" => "ok",
        "running" | "queued" | "pending" | "provisioning" | "retrying" | "starting"
        | "degraded" | "high" | "failed_resumable" | "reconciling" | "draining" | "deleting"
        | "tearing_down" | "review" | "changed" | "overloaded" => "warn",
        "failed" | "denied" | "dead_lettered" | "not_ready" | "exited" | "down" | "failure"
        | "disabled" | "blocked" | "revoked" | "expired" | "rejected" | "removed" | "error"
        | "tool_error" | "refused" => "bad",
        "low" | "on" | "stored" | "added" => "info",
        _ => "muted",
    }
}

pub fn badge(status: &str) -> Markup {
    let text = status.replace('_', " ");
    html! { span class={ "badge " (tone(status)) } data-status=(status) { (text) } }
}

fn parse(at: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(at, &Rfc3339).ok()
}

/// `3 min ago`, `in 2 h`.
pub fn relative(at: OffsetDateTime, now: OffsetDateTime) -> String {
    let secs = (now - at).whole_seconds();
    let (n, future) = (secs.unsigned_abs(), secs < 0);
    let text = match n {
        0..=9 => return "just now".into(),
        10..=59 => format!("{n} s"),
        60..=3599 => format!("{} min", n / 60),
        3600..=86_399 => format!("{} h", n / 3600),
        _ => format!("{} d", n / 86_400),
    };
    if future { format!("in {text}") } else { format!("{text} ago") }
}

/// A time as `2026-12-01 10:04 UTC` with how long ago; `—` when absent.
pub fn when(at: Option<&str>) -> Markup {
    let Some((raw, parsed)) = at.and_then(|a| parse(a).map(|p| (a, p))) else {
        return html! { span.muted { "—" } };
    };
    let absolute = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        parsed.year(),
        u8::from(parsed.month()),
        parsed.day(),
        parsed.hour(),
        parsed.minute(),
        parsed.second()
    );
    let ago = relative(parsed, OffsetDateTime::now_utc());
    html! { time datetime=(raw) title=(absolute) { (ago) } }
}

/// A comma list, or a muted word when empty.
pub fn list_or(items: &[String], none: &str) -> Markup {
    if items.is_empty() {
        return html! { span.muted { (none) } };
    }
    html! { @for (i, item) in items.iter().enumerate() { @if i > 0 { ", " } code { (item) } } }
}

/// JSON for a `data-kind="json"` hidden field or a schema block.
pub fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

pub fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The `<div role="alert">` every `data-api` form shows the API's error in.
pub fn form_error() -> Markup {
    html! { div.form-error role="alert" hidden {} }
}

/// A one-button form calling the API (`data-confirm` asks first).
pub fn action_button(
    method: &str,
    path: &str,
    label: &str,
    class: &str,
    confirm: Option<&str>,
) -> Markup {
    html! {
        form.inline data-api=(path) data-method=(method) data-confirm=[confirm] {
            button type="submit" class=(class) { (label) }
            (form_error())
        }
    }
}

pub fn noscript() -> Markup {
    html! { noscript { p.notice.warn { "The console's forms need JavaScript." } } }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn times_read_as_how_long_ago_and_statuses_keep_their_word() {
        let now = datetime!(2026-12-01 12:00:00 UTC);
        assert_eq!(relative(datetime!(2026-12-01 11:59:58 UTC), now), "just now");
        assert_eq!(relative(datetime!(2026-12-01 11:57:00 UTC), now), "3 min ago");
        assert_eq!(relative(datetime!(2026-12-01 14:00:00 UTC), now), "in 2 h");
        assert_eq!(html! { (when(None)) }.into_string(), r#"<span class="muted">—</span>"#);
        let at = when(Some("2026-12-01T10:04:05Z")).into_string();
        assert!(
            at.contains(r#"datetime="2026-12-01T10:04:05Z""#)
                && at.contains("2026-12-01 10:04:05 UTC")
        );
        assert_eq!(tone("succeeded"), "ok");
        assert_eq!(tone("down"), "bad");
        let badge = badge("dead_lettered").into_string();
        assert!(badge.contains("bad") && badge.contains(">dead lettered<"), "{badge}");
    }

    #[test]
    fn text_from_the_api_is_escaped() {
        let listed = list_or(&["<script>x</script>".to_owned()], "none").into_string();
        assert!(listed.contains("&lt;script&gt;") && !listed.contains("<script>"), "{listed}");
    }
}
