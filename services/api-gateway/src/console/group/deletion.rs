//! A group's deletion: the saga's steps (placements, bucket prefix, auth, records) as they
//! run, re-fetched every second until done. Only super admins delete groups, and the API keeps
//! answering them the progress after the group's registration is gone.

use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use crate::console::Console;
use crate::console::api::{Failure, enc};
use crate::console::layout::{Nav, badge, render, respond, section_failed, when};
use crate::console::model::Deletion;
use crate::console::viewer::Viewer;

/// Tells the page's script to stop re-fetching.
const FINAL: HeaderName = HeaderName::from_static("x-console-final");

async fn read(console: &Console, viewer: &Viewer, group: &str) -> Result<Deletion, Failure> {
    console.api.get(&viewer.ctx, format!("/api/groups/{}/deletion", enc(group))).await
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Path(group): Path<String>,
) -> Response {
    let answer = read(&console, &viewer, &group).await;
    let body = html! {
        p.crumbs { a href="/groups" { "Groups" } " / " (group) " /" }
        h1 { "Deleting " (group) }
        div #teardown data-refresh=(format!("/groups/{}/deletion/progress", enc(&group))) data-every="1000" aria-live="polite" {
            (progress_of(&group, &answer))
        }
    };
    render(&viewer, Nav::Groups, &format!("Deleting {group}"), body)
}

pub async fn progress(
    State(console): State<Console>,
    viewer: Viewer,
    Path(group): Path<String>,
) -> Response {
    let answer = read(&console, &viewer, &group).await;
    if matches!(&answer, Err(f) if f.status == StatusCode::UNAUTHORIZED) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut response = respond(StatusCode::OK, progress_of(&group, &answer));
    if finished(&answer) {
        response.headers_mut().insert(FINAL, HeaderValue::from_static("1"));
    }
    response
}

fn finished(answer: &Result<Deletion, Failure>) -> bool {
    match answer {
        Ok(d) => d.state == "done",
        Err(f) => f.status == StatusCode::NOT_FOUND,
    }
}

fn progress_of(group: &str, answer: &Result<Deletion, Failure>) -> Markup {
    match answer {
        Err(f) if f.status == StatusCode::NOT_FOUND => html! {
            p.notice.ok role="status" data-deletion="done" { "Group " strong { (group) } " is gone: its teardown finished and its records were removed." }
            p { a.button href="/groups" { "Back to groups" } }
        },
        Err(f) => section_failed("the deletion", f),
        Ok(d) => html! {
            p { "State: " span data-deletion=(d.state) { (badge(&d.state)) } " · started " (when(d.started_at.as_deref()))
                @if d.finished_at.is_some() { " · finished " (when(d.finished_at.as_deref())) } }
            @if !d.error.is_empty() { p.notice.warn role="status" { "Retrying: " (d.error) } }
            ol.steps {
                @for s in &d.steps {
                    li.step data-step=(s.name) data-status=(s.status) {
                        div.step-head { (badge(&s.status)) " " strong { (s.name.replace('_', " ")) } " " span.muted.small { (when(s.updated_at.as_deref())) } }
                        @if !s.detail.is_empty() { p.small.muted { (s.detail) } }
                    }
                }
            }
            @if d.state == "done" { p { a.button href="/groups" { "Back to groups" } } }
        },
    }
}
