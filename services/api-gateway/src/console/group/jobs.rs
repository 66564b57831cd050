//! Deploy jobs: the group page's list, and a job's page with the live job log per zone and
//! step. The log is rendered here from the job as it stands, then the console's script keeps
//! it current from the API's SSE route (`/api/groups/{group}/jobs/{job}/events`), which sends
//! the whole job on every change; a stuck rollout's pod and reason show under its step.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, block};
use crate::console::Console;
use crate::console::api::enc;
use crate::console::layout::{
    Nav, action_button, badge, empty, failure_page, form_error, render, section_failed, when,
};
use crate::console::model::{Job, Review, StepRun, SurfaceChange};
use crate::console::viewer::Viewer;

pub fn terminal(state: &str) -> bool {
    matches!(state, "succeeded" | "failed" | "cancelled" | "dead_lettered")
}

fn short(id: &str) -> String {
    id.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect()
}

pub fn section(data: &Data) -> Markup {
    let g = &data.group.name;
    let body = html! {
        @match &data.jobs {
            Err(f) => (section_failed("deploy jobs", f)),
            Ok(jobs) if jobs.items.is_empty() => (empty("No deploys yet.", html! { "Deploy (canary) on an environment starts one; its log shows here." })),
            Ok(jobs) => div.table-wrap {
                table #jobs {
                    thead { tr {
                        th scope="col" { "Job" } th scope="col" { "Environment" } th scope="col" { "Ref" }
                        th scope="col" { "State" } th scope="col" { "Requested" } th scope="col" { "Finished" } th scope="col" { "Error" }
                    } }
                    tbody {
                        @for j in &jobs.items {
                            tr data-job=(j.id) {
                                th scope="row" { a href=(format!("/groups/{}/jobs/{}", enc(g), enc(&j.id))) { code { "…" (short(&j.id)) } } }
                                td { (j.environment) }
                                td { code { (j.git_ref) } @if !j.commit.is_empty() { " " code.muted { (j.commit.chars().take(8).collect::<String>()) } } }
                                td { (badge(&j.state)) }
                                td { (when(j.created_at.as_deref())) }
                                td { (when(j.finished_at.as_deref())) }
                                td.error-cell { span.error-text { (j.error) } }
                            }
                        }
                    }
                }
            },
        }
    };
    block(
        "jobs",
        "Deploy jobs",
        html! {
            p.muted { "Per zone: sync, write config, canary, reload and smoke, review, stable. A failure from the canary on scales the canary to zero and leaves stable untouched. Review waits for a group admin only when the tools' surface changed in an environment that reviews changes." }
        },
        body,
    )
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Path((group, id)): Path<(String, String)>,
) -> Response {
    let path = format!("/api/groups/{}/jobs/{}", enc(&group), enc(&id));
    let job: Job = match console.api.get(&viewer.ctx, &path).await {
        Ok(job) => job,
        Err(f) => return failure_page(&viewer, Nav::Groups, &format!("Job {id} of {group}"), &f),
    };
    let live = !terminal(&job.state);
    let body = html! {
        p.crumbs { a href="/groups" { "Groups" } " / " a href=(format!("/groups/{}", enc(&group))) { (group) } " / " a href=(format!("/groups/{}#jobs", enc(&group))) { "jobs" } " /" }
        div.title-row {
            h1 { "Deploy of " (job.environment) }
            span data-job-state { (badge(&job.state)) }
            @if live && viewer.can(&group, Action::Deploy) {
                span data-job-cancel { (action_button("POST", &format!("{path}/cancel"), "Cancel deploy", "danger small",
                    Some("Cancel this deploy? A running job stops at its next step boundary and scales the canary back."))) }
            }
        }
        dl.facts {
            div { dt { "Job" } dd { code { (job.id) } } }
            div { dt { "Ref" } dd { code { (job.git_ref) } } }
            div { dt { "Commit" } dd { code data-job-commit { (job.commit) } } }
            div { dt { "Requested by" } dd { code { (job.requested_by) } } }
            div { dt { "Started" } dd { (when(job.started_at.as_deref())) } }
            div { dt { "Attempt" } dd { (job.attempt) } }
        }
        p.notice.bad role="alert" data-job-error hidden[job.error.is_empty()] { (job.error) }
        @if let Some(review) = &job.review { (review_section(&job, review, &path, viewer.can(&group, Action::Deploy))) }
        p.muted.small data-job-live hidden[!live] { span.pulse aria-hidden="true" {} " Live: following the job as it runs." }
        div #job-log data-job-events=[live.then(|| format!("{path}/events"))] aria-live="polite" {
            (zones(&job))
        }
    };
    render(&viewer, Nav::Groups, &format!("Deploy {}", job.environment), body)
}

/// The surface review: what changed, side by side per zone (stable, then the canary), and
/// while it is open, approve and reject for those who may deploy.
fn review_section(job: &Job, review: &Review, path: &str, can_decide: bool) -> Markup {
    let pending = review.decision == "pending";
    html! {
        section.review data-review=(review.decision) aria-labelledby="review-title" {
            div.title-row {
                h2 #review-title { "Surface review" }
                (badge(&review.decision))
            }
            @if pending {
                p { "The canary lists a different surface from stable's: what these tools, resources or prompts tell a model has changed. Stable keeps serving the old surface until a group admin approves; rejecting scales the canary to zero. Left undecided, the review expires as a rejection " (when(review.expires_at.as_deref())) "." }
                @if can_decide {
                    div.review-actions {
                        form.inline data-api=(format!("{path}/approve")) data-method="POST" data-confirm="Approve this surface change? Stable restarts on the canary's commit." {
                            label { span.sr { "Reason for approving" } input type="text" name="reason" maxlength="500" placeholder="Reason (optional)"; }
                            button type="submit" class="primary" { "Approve" }
                            (form_error())
                        }
                        form.inline data-api=(format!("{path}/reject")) data-method="POST" data-confirm="Reject this surface change? The canary scales to zero; stable stays as it is." {
                            label { span.sr { "Reason for rejecting" } input type="text" name="reason" maxlength="500" placeholder="Reason (optional)"; }
                            button type="submit" class="danger" { "Reject" }
                            (form_error())
                        }
                    }
                }
            } @else {
                p data-review-decided {
                    (review.decision.replace('_', " ")) " by " code { (review.decided_by) } " " (when(review.decided_at.as_deref()))
                    @if !review.reason.is_empty() { ": " (review.reason) }
                }
            }
            @for z in job.zones.iter().filter(|z| !z.surface_changes.is_empty()) {
                h3 { (z.zone) ": " (z.surface_changes.len()) " change(s)" }
                @for c in &z.surface_changes { (surface_change(c)) }
            }
        }
    }
}

fn pretty(value: Option<&serde_json::Value>) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}

/// One changed item: a table of its fields with stable's value beside the canary's.
fn surface_change(c: &SurfaceChange) -> Markup {
    let rows: Vec<(String, String, String)> = match c.change.as_str() {
        "added" => vec![(String::new(), "(absent)".into(), pretty(c.item.as_ref()))],
        "removed" => vec![(String::new(), pretty(c.item.as_ref()), "(absent)".into())],
        _ => c
            .fields
            .iter()
            .map(|f| (f.path.clone(), pretty(f.before.as_ref()), pretty(f.after.as_ref())))
            .collect(),
    };
    html! {
        div.surface-change data-kind=(c.kind) data-name=(c.name) data-change=(c.change) {
            h4 { (c.kind) " " code { (c.name) } " " (badge(&c.change)) }
            div.table-wrap {
                table.diff {
                    thead { tr { th scope="col" { "Field" } th scope="col" { "Stable serves" } th scope="col" { "Canary serves" } } }
                    tbody {
                        @for (path, before, after) in &rows {
                            tr data-path=(path) {
                                th scope="row" { code { @if path.is_empty() { "(whole item)" } @else { (path) } } }
                                td.before { pre { (before) } }
                                td.after { pre { (after) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The log per zone and step (the script renders the same structure from each SSE message).
fn zones(job: &Job) -> Markup {
    html! {
        @if job.zones.is_empty() { p.muted { "Waiting for the deployer to pick the job up…" } }
        @for z in &job.zones {
            section.zone-run data-zone=(z.zone) {
                h2 { (z.zone) " " (badge(&z.status)) }
                ol.steps { @for s in &z.steps { (step(s)) } }
            }
        }
    }
}

fn step(s: &StepRun) -> Markup {
    html! {
        li.step data-step=(s.step) data-status=(s.status) {
            div.step-head {
                (badge(&s.status)) " " strong { (s.step.replace('_', " ")) }
                @if !s.outcome.is_empty() { " " span.muted { (s.outcome) } }
            }
            @if !s.error.is_empty() { p.error-text { (s.error) } }
            @for w in &s.stuck { p.stuck { "Stuck: " code { (w.worker) } " — " (w.reason) } }
            @if !s.log.is_empty() { pre.log { @for l in &s.log { (l.text) "\n" } } }
        }
    }
}
