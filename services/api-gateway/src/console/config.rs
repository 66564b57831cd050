//! Config (super admins): the auto-rebalance scheduler (on/off, interval), the GitHub App the
//! platform clones private repos with, and the worker sizes with the sizes each zone allows.
//! Whether the viewer may see it is the API's answer to `GET /api/settings`.

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::Console;
use super::layout::{Nav, badge, failure_page, form_error, list_or, render, section_failed, when};
use super::model::{Page, Settings, ZoneSummary};
use super::viewer::Viewer;

/// The sizes a worker can have (what `s`, `m`, `l` mean on every provider).
pub const SIZES: [(&str, &str, &str); 3] =
    [("s", "250m", "512Mi"), ("m", "500m", "1Gi"), ("l", "1", "2Gi")];

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let (settings, zones) = tokio::join!(
        console.api.get::<Settings>(&viewer.ctx, "/api/settings"),
        console.api.get::<Page<ZoneSummary>>(&viewer.ctx, "/api/zones?page_size=1000"),
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
