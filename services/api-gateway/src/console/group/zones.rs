//! Zones and workers on the group page: the Zone actions card per zone — worker count, size
//! (super admins), IP rules, Rebalance (its `applied` answer and note shown as the API gives
//! them: `applied: false` while the load balancer reconciles) — with the zone's load cell and
//! its workers.

use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, Read, block};
use crate::console::api::enc;
use crate::console::config::SIZES;
use crate::console::layout::{badge, empty, form_error, section_failed, when};
use crate::console::model::{Page, Placement, Worker};
use crate::console::viewer::Viewer;

pub fn section(data: &Data, viewer: &Viewer) -> Markup {
    let body = html! {
        @match &data.placements {
            Err(f) => (section_failed("zones", f)),
            Ok(p) if p.items.is_empty() => (empty("Not placed in any zone yet.", html! {
                "Add an environment with zones and deploy it; each zone then gets its Zone actions card here."
            })),
            Ok(p) => div.cards {
                @for (i, placement) in p.items.iter().enumerate() {
                    (card(data, viewer, placement, data.per_zone.get(i).map(|z| &z.workers)))
                }
            },
        }
    };
    block(
        "zones",
        "Zones and workers",
        html! {
            p.muted { "The autoscaler keeps between the worker count and twice it. Changing IP rules rolls the zone's pods." }
        },
        body,
    )
}

fn card(
    data: &Data,
    viewer: &Viewer,
    p: &Placement,
    workers: Option<&Read<Page<Worker>>>,
) -> Markup {
    let g = &data.group.name;
    let base = format!("/api/groups/{}/zones/{}", enc(g), enc(&p.zone));
    let act = viewer.can(g, Action::ZoneActions);
    let size = viewer.can(g, Action::SetSize);
    let cell = data.load.as_ref().ok().and_then(|l| l.items.iter().find(|c| c.zone == p.zone));
    let allowed: Vec<String> = data
        .zones
        .as_ref()
        .ok()
        .and_then(|z| z.items.iter().find(|z| z.name == p.zone))
        .map(|z| z.allowed_sizes.clone())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| SIZES.iter().map(|s| s.0.to_owned()).collect());
    html! {
        article.card.zone-card data-zone=(p.zone) {
            div.card-head {
                h3 { (p.zone) }
                (badge(&p.status))
                @if let Some(c) = cell { span title=(format!("{} in flight of {}", c.in_flight, c.cap)) { "load " (badge(&c.state)) } }
            }
            @if !p.status_message.is_empty() { p.muted.small { (p.status_message) } }
            dl.facts.compact {
                div { dt { "Workers" } dd { (p.worker_count) " to " (p.max_workers) } }
                div { dt { "Size" } dd { code { (p.size) } } }
                div { dt { "Namespace" } dd { code { (p.namespace) } } }
                div { dt { "IP rules" } dd { @if p.ip_rules.is_empty() { span.muted { "every source" } } @else { @for r in &p.ip_rules { code { (r) } " " } } } }
                @if !p.disabled_packages.is_empty() { div { dt { "Disabled here" } dd { @for d in &p.disabled_packages { code { (d) } " " } } } }
            }
            @if act {
                div.zone-actions {
                    h4 { "Zone actions" }
                    form.row data-api=(format!("{base}/count")) data-method="PUT" {
                        label { "Worker count" input name="count" type="number" min="1" data-kind="int" value=(p.worker_count) required; }
                        button type="submit" { "Set count" }
                        (form_error())
                    }
                    @if size {
                        form.row data-api=(format!("{base}/size")) data-method="PUT" {
                            label { "Size"
                                select name="size" { @for s in &allowed { option value=(s) selected[*s == p.size] { (s) } } }
                            }
                            button type="submit" { "Set size" }
                            (form_error())
                        }
                    }
                    form.stack data-api=(format!("{base}/ip-rules")) data-method="PUT" data-confirm="Change the IP rules? The zone's pods are rolled." {
                        label { "IP rules (CIDRs)"
                            textarea name="ip_rules" data-kind="list" rows="2" placeholder="10.0.0.0/8" { (p.ip_rules.join("\n")) }
                            small.hint { "One per line; empty allows every source. Include the console's own range: deploys smoke-test as an ordinary caller." }
                        }
                        div.actions { button type="submit" { "Save IP rules" } }
                        (form_error())
                    }
                    form.row data-api=(format!("{base}/rebalance")) data-then="show" {
                        button type="submit" { "Rebalance" }
                        (form_error())
                        div.result data-result hidden role="status" {
                            "applied: " strong data-field="applied" {} " " span data-field="note" {}
                        }
                    }
                }
            }
            (worker_table(workers))
        }
    }
}

fn worker_table(workers: Option<&Read<Page<Worker>>>) -> Markup {
    match workers {
        None => html! {},
        Some(Err(f)) => section_failed("workers", f),
        Some(Ok(w)) if w.items.is_empty() => html! { p.muted.small { "No workers running." } },
        Some(Ok(w)) => html! {
            div.table-wrap { table.workers {
                thead { tr { th scope="col" { "Worker" } th scope="col" { "Track" } th scope="col" { "State" } th scope="col" { "Commit" } th scope="col" { "Restarts" } th scope="col" { "Started" } } }
                tbody { @for w in &w.items {
                    tr data-worker=(w.id) {
                        td { code { (w.id) } }
                        td { (w.track.replace('_', " ")) }
                        td { (badge(&w.state)) @if !w.reason.is_empty() { div.small.error-text { (w.reason) } } }
                        td { code { (w.loaded_commit.chars().take(8).collect::<String>()) } }
                        td { (w.restarts) }
                        td { (when(w.started_at.as_deref())) }
                    }
                } }
            } }
        },
    }
}
