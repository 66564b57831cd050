//! The group's own settings: repository, worker image and restrictions (changed by super
//! admins), and deleting the group, which tears down everything it owned in every zone.

use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, block};
use crate::console::api::enc;
use crate::console::layout::{form_error, list_or};
use crate::console::viewer::Viewer;

pub fn section(data: &Data, viewer: &Viewer) -> Markup {
    let group = &data.group;
    let g = &group.name;
    let manage = viewer.can(g, Action::ManageGroup);
    let r = &group.restrictions;
    let zero = |n: u32, none: &str| if n == 0 { none.to_owned() } else { n.to_string() };
    let body = html! {
        dl.facts {
            div { dt { "Worker image" } dd { @if group.worker_image.is_empty() { span.muted { "platform default" } } @else { code { (group.worker_image) } } } }
            div { dt { "GitHub App installation" } dd { @match group.github_app_installation_id { Some(id) => code { (id) }, None => span.muted { "none" } } } }
            div { dt { "Max workers per zone" } dd { (zero(r.max_workers_per_zone, "no limit")) } }
            div { dt { "Allowed zones" } dd { (list_or(&r.allowed_zones, "any zone")) } }
            div { dt { "Egress allowed to" } dd { (list_or(&r.egress_allow, "ports 80 and 443")) } }
            div { dt { "In-flight cap per node" } dd { (zero(r.max_in_flight_per_node, "node default")) } }
        }
        @if manage && group.status != "deleting" {
            details.edit #group-settings {
                summary { "Change repository, image and restrictions" }
                form.grid data-api=(format!("/api/groups/{}", enc(g))) data-method="PATCH" {
                    label { "Repository URL" input name="repo_url" value=(group.repo_url) required; }
                    label { "Default ref" input name="default_ref" value=(group.default_ref) required; }
                    label { "Worker image" input name="worker_image" value=(group.worker_image) placeholder="platform default"; }
                    label { "GitHub App installation id" input name="github_app_installation_id" data-kind="int" inputmode="numeric" value=(group.github_app_installation_id.unwrap_or(0)); small.hint { "0: none." } }
                    label { "Max workers per zone" input name="restrictions.max_workers_per_zone" type="number" min="0" data-kind="int" value=(r.max_workers_per_zone); small.hint { "0: no limit." } }
                    label { "In-flight cap per node" input name="restrictions.max_in_flight_per_node" type="number" min="0" data-kind="int" value=(r.max_in_flight_per_node); small.hint { "0: the node default." } }
                    fieldset {
                        legend { "Allowed zones" }
                        @for z in data.zone_names() { label.check { input type="checkbox" name="restrictions.allowed_zones" value=(z) data-kind="checks" checked[r.allowed_zones.contains(&z)]; (z) } }
                        small.hint { "None checked: any zone." }
                    }
                    label { "Egress allowed to" textarea name="restrictions.egress_allow" data-kind="list" rows="2" { (r.egress_allow.join("\n")) } small.hint { "Ports the group's code may connect to, one per line: 5432, db.internal:5432, 10.0.0.0/8:5432 (a destination without a port: 80 and 443). Empty: 80 and 443." } }
                    (form_error())
                    div.actions { button.primary type="submit" { "Save settings" } }
                }
            }
            section.danger-zone {
                h3 { "Delete group" }
                p { "Tears down everything the group owns in every zone (namespaces, pods, routes, identities), its bucket prefix, keys, secrets and members. The audit log stays." }
                form.inline data-api=(format!("/api/groups/{}", enc(g))) data-method="DELETE"
                    data-confirm=(format!("Delete group {g} and tear down all of its zones?")) data-confirm-type=(g)
                    data-then=(format!("go:/groups/{}/deletion", enc(g))) {
                    button.danger type="submit" { "Delete group" }
                    (form_error())
                }
            }
        }
    };
    block("settings", "Worker image and restrictions", html! {}, body)
}
