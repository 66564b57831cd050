//! The dashboard: a load cell per zone × group — low, even, high or down from the nodes'
//! in-flight counts against their caps — re-fetched every two seconds while the page is open.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::Console;
use super::api::{Failure, enc};
use super::layout::{Nav, badge, empty, render, respond, section_failed, when};
use super::model::{LoadCell, Page};
use super::viewer::Viewer;

async fn load(console: &Console, viewer: &Viewer) -> Result<Page<LoadCell>, Failure> {
    console.api.get(&viewer.ctx, "/api/load?page_size=1000").await
}

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let cells = grid(&load(&console, &viewer).await);
    let body = html! {
        h1 { "Dashboard" }
        p.lead {
            "Load per zone and group, from each node's in-flight calls: "
            (badge("low")) " under 30% of the in-flight cap, " (badge("even")) ", "
            (badge("high")) " over 80%, " (badge("down")) " when no node serves."
        }
        div #cells data-refresh="/dashboard/cells" data-every="2000" aria-live="polite" { (cells) }
    };
    render(&viewer, Nav::Dashboard, "Dashboard", body)
}

/// The grid alone, for the page's script to swap in.
pub async fn cells(State(console): State<Console>, viewer: Viewer) -> Response {
    let answer = load(&console, &viewer).await;
    let status = match &answer {
        Err(f) if f.status == StatusCode::UNAUTHORIZED => {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        _ => StatusCode::OK,
    };
    respond(status, grid(&answer))
}

fn grid(answer: &Result<Page<LoadCell>, Failure>) -> Markup {
    let cells = match answer {
        Err(f) => return section_failed("load cells", f),
        Ok(page) if page.items.is_empty() => {
            return empty(
                "No load yet.",
                html! {
                    "Cells appear once a group's environment is deployed to a zone. Start on "
                    a href="/groups" { "Groups" } "."
                },
            );
        }
        Ok(page) => &page.items,
    };
    let zones: BTreeSet<&str> = cells.iter().map(|c| c.zone.as_str()).collect();
    let mut by_group: BTreeMap<&str, BTreeMap<&str, &LoadCell>> = BTreeMap::new();
    for c in cells {
        by_group.entry(&c.group).or_default().insert(&c.zone, c);
    }
    let count = |state: &str| cells.iter().filter(|c| c.state == state).count();
    html! {
        p.summary {
            @for state in ["low", "even", "high", "down"] { span { (badge(state)) " " (count(state)) } " " }
            span.muted.small { "updated " (when(Some(&now()))) }
        }
        div.table-wrap {
            table.load #load {
                thead { tr { th scope="col" { "Group" } @for z in &zones { th scope="col" { (z) } } } }
                tbody {
                    @for (group, row) in &by_group {
                        tr {
                            th scope="row" { a href=(format!("/groups/{}", enc(group))) { (group) } }
                            @for z in &zones {
                                @match row.get(z) {
                                    None => td.cell.none { span.muted { "not placed" } },
                                    Some(c) => (cell(c)),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn cell(c: &LoadCell) -> Markup {
    let detail = format!(
        "{} in flight of a cap of {} on {} live node(s); workers {} (min {}, max {})",
        c.in_flight, c.cap, c.live_nodes, c.desired_workers, c.min_workers, c.max_workers
    );
    let percent = (c.utilization * 100.0).round() as u32;
    html! {
        td.cell data-group=(c.group) data-zone=(c.zone) data-state=(c.state) title=(detail) {
            (badge(&c.state))
            div.figures { strong { (c.in_flight) } " / " (c.cap) " in flight" span.muted { " · " (percent) "%" } }
            meter min="0" max="1" low="0.3" high="0.8" optimum="0.5" value=(c.utilization) aria-label="utilization" {}
            details {
                summary { (c.live_nodes) " node(s)" }
                ul.nodes {
                    @for n in &c.nodes {
                        li { code { (n.node_id) } " " span.muted { (n.track.replace('_', " ")) } ": " (n.in_flight) "/" (n.cap)
                            @if !n.ready { " " (badge("not_ready")) } }
                    }
                }
            }
        }
    }
}

fn now() -> String {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
}
