//! Config (super admins): the auto-rebalance scheduler (on/off, interval), the GitHub App the
//! platform clones private repos with, the bounds on what group admins may grant their workers
//! in the cloud, and the worker sizes with the sizes each zone allows.
//! Whether the viewer may see it is the API's answer to `GET /api/settings`.

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::Console;
use super::layout::{Nav, badge, failure_page, form_error, list_or, render, section_failed, when};
use super::model::{Page, ProviderBounds, ServiceAccountBounds, Settings, ZoneSummary};
use super::viewer::Viewer;

/// The sizes a worker can have (what `s`, `m`, `l` mean on every provider).
pub const SIZES: [(&str, &str, &str); 3] =
    [("s", "250m", "512Mi"), ("m", "500m", "1Gi"), ("l", "1", "2Gi")];

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let (settings, zones, bounds) = tokio::join!(
        console.api.get::<Settings>(&viewer.ctx, "/api/settings"),
        console.api.get::<Page<ZoneSummary>>(&viewer.ctx, "/api/zones?page_size=1000"),
        console.api.get::<ServiceAccountBounds>(&viewer.ctx, "/api/service-account-bounds"),
    );
    let settings = match settings {
        Ok(s) => s,
        Err(f) => return failure_page(&viewer, Nav::Config, "Config is for super admins.", &f),
    };
    let body = html! {
        h1 { "Config" }
        p.lead { "Platform settings. Last changed " (when(settings.updated_at.as_deref()))
            @if !settings.updated_by.is_empty() { " by " code { (settings.updated_by) } } "." }
        div.cards {
            section.card #scheduler {
                h2 { "Auto-rebalance scheduler" }
                p { "State: " @if settings.auto_rebalance_enabled { (badge("on")) } @else { (badge("off")) } }
                p.muted.small { "When on, the scheduler rebalances every placed zone each interval; each run is audited as " code { "scheduler" } "." }
                form.stack data-api="/api/settings" data-method="PUT" {
                    label.check {
                        input type="checkbox" name="auto_rebalance_enabled" data-kind="bool" checked[settings.auto_rebalance_enabled];
                        "Rebalance automatically"
                    }
                    label { "Interval (seconds)"
                        input name="auto_rebalance_interval_seconds" type="number" min="10" step="1" data-kind="int"
                            value=(settings.auto_rebalance_interval_seconds);
                        small.hint { "At least 10." }
                    }
                    (form_error())
                    div.actions { button.primary type="submit" { "Save scheduler" } }
                }
            }
            section.card #github-app {
                h2 { "GitHub App" }
                p { "App id: " @match settings.github_app_id { Some(id) => code { (id) }, None => span.muted { "not configured" } } }
                p { "Private key: " @if settings.github_app_private_key_set { (badge("stored")) " " span.muted.small { "(never shown)" } } @else { span.muted { "none" } } }
                form.stack data-api="/api/settings" data-method="PUT" {
                    label { "App id" input name="github_app_id" inputmode="numeric" data-kind="int" data-optional value=[settings.github_app_id]; small.hint { "0 removes the App." } }
                    label { "Private key (PEM)" textarea name="github_app_private_key" rows="4" data-optional placeholder="-----BEGIN RSA PRIVATE KEY-----" autocomplete="off" spellcheck="false" {} small.hint { "Write-only; leave empty to keep the stored key." } }
                    (form_error())
                    div.actions { button.primary type="submit" { "Save GitHub App" } }
                }
            }
        }
        section.card #bounds {
            h2 { "Service-account bounds" }
            p.muted.small { "What group admins may grant their workers in the cloud. A rule outside these is refused when set; rules set before a narrowing stay stored but are not applied. On AWS the bounds are also each role's permissions boundary. Patterns use " code { "*" } " for any run of characters." }
            @match &bounds {
                Err(f) => (section_failed("bounds", f)),
                Ok(b) => {
                    p.small { "Version " (b.version) @if b.version == 0 { " (the defaults)" } @else { ", changed " (when(b.updated_at.as_deref())) " by " code { (b.updated_by) } } "." }
                    form.stack data-api="/api/service-account-bounds" data-method="PUT" {
                        input type="hidden" name="expected_version" data-kind="int" value=(b.version);
                        (provider_bounds("aws", "AWS", "actions", &b.aws))
                        (provider_bounds("gcp", "GCP", "roles", &b.gcp))
                        (form_error())
                        div.actions { button.primary type="submit" { "Save bounds" } }
                    }
                }
            }
        }
        section.card #sizes {
            h2 { "Sizes" }
            p.muted.small { "What a worker size means; super admins set each placement's size in the group page's Zone actions card, among the sizes its zone allows." }
            div.table-wrap { table {
                thead { tr { th scope="col" { "Size" } th scope="col" { "CPU" } th scope="col" { "Memory" } } }
                tbody { @for (size, cpu, memory) in SIZES { tr { th scope="row" { code { (size) } } td { (cpu) } td { (memory) } } } }
            } }
            h3 { "Allowed per zone" }
            @match &zones {
                Err(f) => (section_failed("zones", f)),
                Ok(z) if z.items.is_empty() => p.muted { "No zones yet." },
                Ok(z) => ul.plain { @for zone in &z.items { li { strong { (zone.name) } ": " (list_or(&zone.allowed_sizes, "every size")) } } },
            }
        }
    };
    render(&viewer, Nav::Config, "Config", body)
}

/// One provider's fields of the bounds form (`aws.permissions`, ...).
fn provider_bounds(key: &str, name: &str, what: &str, b: &ProviderBounds) -> maud::Markup {
    let lines = |list: &[String]| list.join("\n");
    html! {
        fieldset.stack data-provider=(key) {
            legend { (name) }
            label { "Permissions (" (what) ") group admins may grant"
                textarea name={ (key) ".permissions" } data-kind="list" rows="3" spellcheck="false" { (lines(&b.permissions)) }
                small.hint { "One pattern per line." }
            }
            label { "Denied, even where the above allows"
                textarea name={ (key) ".denied" } data-kind="list" rows="4" spellcheck="false" { (lines(&b.denied)) }
            }
            label { "Resources rules may name"
                textarea name={ (key) ".resources" } data-kind="list" rows="2" spellcheck="false" { (lines(&b.resources)) }
            }
            label.check {
                input type="checkbox" name={ (key) ".wildcards" } data-kind="bool" checked[b.wildcards];
                "Permissions may hold wildcards"
            }
            label.check {
                input type="checkbox" name={ (key) ".unscoped" } data-kind="bool" checked[b.unscoped];
                @if key == "gcp" { "Rules may bind on the whole project" } @else { "Rules may name every resource" }
            }
        }
    }
}
