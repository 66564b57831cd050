//! Environments: every environment the viewer can see across their groups, the last deploy
//! flattened into the row (outcome, when, error), and Open group — where deploys start.

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::Console;
use super::api::enc;
use super::layout::{Nav, badge, empty, list_or, render, section_failed, when};
use super::model::{Environment, Page};
use super::viewer::Viewer;

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let envs =
        console.api.get::<Page<Environment>>(&viewer.ctx, "/api/environments?page_size=1000").await;
    let body = html! {
        h1 { "Environments" }
        p.lead { "Every environment of your groups with its last deploy. Deploys start on the group page." }
        @match &envs {
            Err(f) => (section_failed("environments", f)),
            Ok(envs) if envs.items.is_empty() => (empty("No environments yet.", html! {
                "Open a group and use " strong { "Add environment" } " to deploy it to zones."
            })),
            Ok(envs) => div.table-wrap {
                table #environments {
                    thead { tr {
                        th scope="col" { "Group" } th scope="col" { "Environment" } th scope="col" { "Ref" }
                        th scope="col" { "Zones" } th scope="col" { "Last deploy" } th scope="col" { "When" }
                        th scope="col" { "Error" } th scope="col" { span.sr { "Open" } }
                    } }
                    tbody {
                        @for e in &envs.items {
                            tr data-env=(format!("{}/{}", e.group, e.name)) {
                                td { (e.group) }
                                th scope="row" { strong { (e.name) } @if e.deleting { " " (badge("deleting")) } }
                                td { code { (e.git_ref) } }
                                td { (list_or(&e.zones, "none")) }
                                @match &e.last_deploy {
                                    None => { td { span.muted { "never deployed" } } td { span.muted { "—" } } td {} }
                                    Some(d) => {
                                        td data-outcome=(d.outcome) { (badge(&d.outcome)) " " @if !d.commit.is_empty() { code.small { (d.commit.chars().take(8).collect::<String>()) } } }
                                        td { (when(d.finished_at.as_deref())) }
                                        td.error-cell { @if !d.error.is_empty() { span.error-text { (d.error) } } }
                                    }
                                }
                                td.actions { a.button.small href=(format!("/groups/{}#environments", enc(&e.group))) { "Open group" } }
                            }
                        }
                    }
                }
            },
        }
    };
    render(&viewer, Nav::Environments, "Environments", body)
}
