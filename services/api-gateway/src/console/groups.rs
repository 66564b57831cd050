//! Groups: the groups the viewer belongs to (every group for super admins, as the API
//! answers), and Create group for super admins.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::Console;
use super::api::enc;
use super::layout::{Nav, badge, empty, form_error, render, section_failed, when};
use super::model::{Group, Page};
use super::viewer::Viewer;

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let groups = console.api.get::<Page<Group>>(&viewer.ctx, "/api/groups?page_size=1000").await;
    let create = viewer.can("", Action::CreateGroup);
    let body = html! {
        h1 { "Groups" }
        p.lead { "A group is a team: one git repo at a ref, its environments, keys, secrets and members." }
        @match &groups {
            Err(f) => (section_failed("groups", f)),
            Ok(groups) if groups.items.is_empty() => (empty("No groups yet.", html! {
                @if create { "Create the first group below from a git repo of MCP packages." }
                @else { "You are not a member of any group. Ask a group admin to add you." }
            })),
            Ok(groups) => (table(&groups.items)),
        }
        @if create { (create_group()) }
    };
    render(&viewer, Nav::Groups, "Groups", body)
}

fn table(groups: &[Group]) -> Markup {
    html! {
        div.table-wrap {
            table #groups {
                thead { tr {
                    th scope="col" { "Group" } th scope="col" { "Repository" } th scope="col" { "Default ref" }
                    th scope="col" { "Status" } th scope="col" { "Created" }
                } }
                tbody {
                    @for g in groups {
                        tr data-group=(g.name) {
                            th scope="row" { a href=(format!("/groups/{}", enc(&g.name))) { strong { (g.name) } } }
                            td.wrap { code { (g.repo_url) } }
                            td { code { (g.default_ref) } }
                            td { (badge(&g.status)) }
                            td { (when(g.created_at.as_deref())) }
                        }
                    }
                }
            }
        }
    }
}

fn create_group() -> Markup {
    html! {
        section.card #create-group {
            h2 { "Create group" }
            form.grid data-api="/api/groups" data-then="go:/groups/{name}" data-after="github-token" {
                label { "Name" input name="name" required pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" placeholder="payments"; small.hint { "A DNS label; it names namespaces and the MCP URL." } }
                label { "Repository URL" input name="repo_url" required placeholder="https://github.com/acme/mcp-tools"; small.hint { "https://, git@host:path, or a local path in local mode." } }
                label { "Ref" input name="default_ref" placeholder="main"; small.hint { "Branch, tag or commit; main when empty." } }
                fieldset {
                    legend { "Private repository (optional)" }
                    label { "GITHUB_TOKEN" input name="github_token" type="password" autocomplete="off" data-skip; small.hint { "Stored as the group's secret GITHUB_TOKEN (never shown again)." } }
                    label { "or GitHub App installation id" input name="github_app_installation_id" inputmode="numeric" data-kind="int" data-optional; small.hint { "Needs the App on the Config page." } }
                }
                (form_error())
                div.actions { button.primary type="submit" { "Create group" } }
            }
        }
    }
}
