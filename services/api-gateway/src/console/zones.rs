//! Zones and workers: every zone (name, provider, region, allowed sizes) with the worker
//! counts per group from the running workers (only the groups the viewer may see: the API
//! filters them). Super admins add and delete zones.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::Console;
use super::api::enc;
use super::layout::{
    Nav, action_button, badge, empty, form_error, list_or, render, section_failed, when,
};
use super::model::{Page, ZoneSummary};
use super::viewer::Viewer;

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let zones =
        console.api.get::<Page<ZoneSummary>>(&viewer.ctx, "/api/zones?page_size=1000").await;
    let manage = viewer.can("", Action::ManageZones);
    let body = html! {
        div.title-row {
            h1 { "Zones and workers" }
        }
        p.lead { "Where workers run. Nothing runs in a zone until a group attaches it to an environment and deploys." }
        @match &zones {
            Err(f) => (section_failed("zones", f)),
            Ok(zones) if zones.items.is_empty() => (empty("No zones yet.", html! {
                @if manage { "Add the first zone below; then attach it to an environment on a group page." }
                @else { "A super admin creates zones." }
            })),
            Ok(zones) => (table(&zones.items, manage)),
        }
        @if manage { (add_zone()) }
    };
    render(&viewer, Nav::Zones, "Zones", body)
}

fn table(zones: &[ZoneSummary], manage: bool) -> Markup {
    html! {
        div.table-wrap {
            table #zones {
                thead { tr {
                    th scope="col" { "Zone" } th scope="col" { "Provider" } th scope="col" { "Region" }
                    th scope="col" { "Allowed sizes" } th scope="col" { "Workers per group" }
                    th scope="col" { "Created" } @if manage { th scope="col" { span.sr { "Actions" } } }
                } }
                tbody {
                    @for z in zones {
                        tr data-zone=(z.name) {
                            th scope="row" { strong { (z.name) } @if z.deleting { " " (badge("deleting")) } }
                            td { (z.provider.as_deref().unwrap_or("—")) }
                            td { @if z.region.is_empty() { span.muted { "—" } } @else { code { (z.region) } } }
                            td { (list_or(&z.allowed_sizes, "any")) }
                            td {
                                @if z.groups.is_empty() { span.muted { "no workers" } }
                                @else {
                                    ul.chips {
                                        @for g in &z.groups {
                                            li data-group=(g.group) {
                                                a href=(format!("/groups/{}", enc(&g.group))) { (g.group) } ": "
                                                strong { (g.worker) } " stable"
                                                @if g.worker_canary > 0 { ", " (g.worker_canary) " canary" }
                                                @if g.not_ready > 0 { ", " span.warn-text { (g.not_ready) " not ready" } }
                                                span.muted { " (of " (g.desired) ")" }
                                            }
                                        }
                                    }
                                }
                            }
                            td { (when(z.created_at.as_deref())) }
                            @if manage {
                                td.actions {
                                    (action_button("DELETE", &format!("/api/zones/{}", enc(&z.name)), "Delete", "danger small",
                                        Some(&format!("Delete zone {}? Every group's workers in it are torn down for real: namespace, pods, routes and identity.", z.name))))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn add_zone() -> Markup {
    html! {
        section.card #add-zone {
            h2 { "Add zone" }
            form.grid data-api="/api/zones" {
                label { "Name" input name="name" required pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" placeholder="us-central1-a"; small.hint { "A DNS label." } }
                label { "Provider"
                    select name="provider" {
                        option value="local" { "local (this machine)" }
                        option value="gcp" { "gcp" }
                        option value="aws" { "aws" }
                    }
                }
                label { "Region" input name="region" placeholder="us-central1-a or us-east-1a"; small.hint { "The cloud zone workers pin to; empty for local." } }
                fieldset {
                    legend { "Allowed sizes" }
                    @for (size, what) in [("s", "250m CPU, 512Mi"), ("m", "500m CPU, 1Gi"), ("l", "1 CPU, 2Gi")] {
                        label.check { input type="checkbox" name="allowed_sizes" value=(size) data-kind="checks"; code { (size) } " " span.muted { (what) } }
                    }
                    small.hint { "None checked: every size." }
                }
                (form_error())
                div.actions { button.primary type="submit" { "Add zone" } }
            }
        }
    }
}
