//! Packages per zone: what each zone reported after its last deploy — tools, resources and
//! prompts with their schemas — with Disable on this zone and Block on an environment (a
//! blocked name disappears from `tools/list` on every zone of the environment).

use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, block};
use crate::console::api::enc;
use crate::console::layout::{
    action_button, badge, empty, form_error, json, pretty, section_failed, when,
};
use crate::console::model::{Environment, Package, Placement};
use crate::console::viewer::Viewer;

pub fn section(data: &Data, viewer: &Viewer) -> Markup {
    let placements = data.placements.as_ref().map(|p| p.items.as_slice()).unwrap_or_default();
    let body = html! {
        @if placements.is_empty() { (empty("No packages reported yet.", html! { "Each zone lists its packages after a deploy." })) }
        @for (i, p) in placements.iter().enumerate() {
            section.zone-packages data-zone=(p.zone) {
                h3 { "Zone " (p.zone) }
                @match data.per_zone.get(i).map(|z| &z.packages) {
                    None => {},
                    Some(Err(f)) => (section_failed("packages", f)),
                    Some(Ok(pk)) if pk.items.is_empty() => p.muted { "Nothing reported yet: deploy an environment that uses this zone." },
                    Some(Ok(pk)) => { @for package in &pk.items { (card(data, viewer, p, package)) } },
                }
            }
        }
    };
    block(
        "packages",
        "Packages per zone",
        html! {
            p.muted { "Disable a package on one zone, or block a package or a single tool on an environment: the node hides it from tools/list and answers -32601 until it is enabled again." }
        },
        body,
    )
}

/// The environments that deploy to `zone`.
fn envs_on<'a>(data: &'a Data, zone: &str) -> Vec<&'a Environment> {
    data.environments()
        .iter()
        .filter(|e| e.zones.iter().any(|z| z == zone) && !e.deleting)
        .collect()
}

fn card(data: &Data, viewer: &Viewer, placement: &Placement, p: &Package) -> Markup {
    let g = &data.group.name;
    let act = viewer.can(g, Action::ZoneActions);
    let block = viewer.can(g, Action::ManageEnvironments);
    let base =
        format!("/api/groups/{}/zones/{}/packages/{}", enc(g), enc(&placement.zone), enc(&p.name));
    let envs = envs_on(data, &placement.zone);
    html! {
        article.card.package data-package=(p.name) {
            div.card-head {
                h4 { code { (p.name) } }
                @if p.disabled { (badge("disabled")) } @else if p.error.is_some() { (badge("failed")) } @else { (badge("ready")) }
                span.muted.small { "commit " code { (p.commit.chars().take(8).collect::<String>()) } " · " (when(p.reported_at.as_deref())) }
                @if act {
                    @if p.disabled { (action_button("POST", &format!("{base}/enable"), "Enable on this zone", "small", None)) }
                    @else { (action_button("POST", &format!("{base}/disable"), "Disable on this zone", "small",
                        Some(&format!("Disable {} on zone {}? Its tools, resources and prompts disappear there at once.", p.name, placement.zone)))) }
                }
                @if block { (block_buttons(g, &envs, &p.name)) }
            }
            @if let Some(error) = &p.error {
                p.error-text { (error) }
                @if let Some(tb) = &p.traceback { details { summary { "Traceback" } pre.log { (tb) } } }
            }
            @if !p.tools.is_empty() {
                div.table-wrap { table.tools {
                    caption { "Tools" }
                    thead { tr { th scope="col" { "Tool" } th scope="col" { "Description" } th scope="col" { "Schemas" } @if block { th scope="col" { span.sr { "Block" } } } } }
                    tbody { @for t in &p.tools {
                        tr data-tool=(t.name) {
                            th scope="row" { code { (t.name) } @if !t.title.is_empty() { div.muted.small { (t.title) } } }
                            td { (t.description) }
                            td {
                                details { summary { "input" } pre.schema { (pretty(&t.input_schema)) } }
                                @if !t.output_schema.is_null() { details { summary { "output" } pre.schema { (pretty(&t.output_schema)) } } }
                            }
                            @if block { td.actions { (block_buttons(g, &envs, &t.name)) } }
                        }
                    } }
                } }
            }
            @if !p.resources.is_empty() {
                h5 { "Resources" }
                ul.plain { @for r in &p.resources {
                    li { code { (r.uri) } @if r.template { " " span.badge.muted { "template" } } " " (r.name)
                        @if !r.mime_type.is_empty() { " " span.muted.small { (r.mime_type) } }
                        @if !r.description.is_empty() { div.muted.small { (r.description) } } }
                } }
            }
            @if !p.prompts.is_empty() {
                h5 { "Prompts" }
                ul.plain { @for pr in &p.prompts {
                    li { code { (pr.name) } " (" @for (i, a) in pr.arguments.iter().enumerate() { @if i > 0 { ", " } (a.name) @if a.required { "*" } } ")"
                        @if !pr.description.is_empty() { div.muted.small { (pr.description) } } }
                } }
            }
        }
    }
}

/// "Block in <env>" per environment on the zone (or its blocked state and Unblock).
fn block_buttons(group: &str, envs: &[&Environment], item: &str) -> Markup {
    html! {
        @for env in envs {
            @let path = format!("/api/groups/{}/environments/{}", enc(group), enc(&env.name));
            @if env.blocked.iter().any(|b| b == item) {
                @let rest: Vec<&String> = env.blocked.iter().filter(|b| *b != item).collect();
                form.inline data-api=(path) data-method="PATCH" {
                    input type="hidden" name="blocked" data-kind="json" value=(json(&rest));
                    span.badge.bad { "blocked in " (env.name) }
                    button.link.small type="submit" aria-label=(format!("Unblock {item} in {}", env.name)) { "unblock" }
                    (form_error())
                }
            } @else {
                @let more: Vec<&str> = env.blocked.iter().map(String::as_str).chain(std::iter::once(item)).collect();
                form.inline data-api=(path) data-method="PATCH"
                    data-confirm=(format!("Block {item} in environment {}? It disappears from tools/list on every zone of it.", env.name)) {
                    input type="hidden" name="blocked" data-kind="json" value=(json(&more));
                    button.small type="submit" aria-label=(format!("Block {item} in {}", env.name)) { "Block in " (env.name) }
                    (form_error())
                }
            }
        }
    }
}
