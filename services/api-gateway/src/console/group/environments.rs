//! The group page's environments: ref, zones, verbose, blocked list and last result, with
//! Deploy (canary), edit, delete, and Add environment (zones from a checkbox list of the zones
//! that exist).

use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, block};
use crate::console::api::enc;
use crate::console::layout::{
    action_button, badge, empty, form_error, json, list_or, section_failed, when,
};
use crate::console::model::Environment;
use crate::console::viewer::Viewer;

pub fn section(data: &Data, viewer: &Viewer) -> Markup {
    let g = &data.group.name;
    let manage = viewer.can(g, Action::ManageEnvironments);
    let deploy = viewer.can(g, Action::Deploy);
    let body = html! {
        @match &data.envs {
            Err(f) => (section_failed("environments", f)),
            Ok(envs) if envs.items.is_empty() => (empty("No environments yet.", html! {
                @if manage { "Add one below: a name, a ref and the zones it runs in; then Deploy (canary)." }
                @else { "A group admin adds environments." }
            })),
            Ok(envs) => div.env-list { @for env in &envs.items { (environment(data, env, manage, deploy)) } },
        }
        @if manage { (add_environment(data)) }
    };
    block(
        "environments",
        "Environments",
        html! {
            p.muted { "Each environment is the group at a git ref, deployed to a set of zones through a canary. Rolling back is deploying an older ref." }
        },
        body,
    )
}

fn environment(data: &Data, env: &Environment, manage: bool, deploy: bool) -> Markup {
    let g = &data.group.name;
    let path = format!("/api/groups/{}/environments/{}", enc(g), enc(&env.name));
    html! {
        article.card.env data-env=(env.name) {
            div.card-head {
                h3 { (env.name) }
                @if env.deleting { (badge("deleting")) }
                @if env.verbose { span.badge.muted { "verbose" } }
                @if deploy && !env.deleting {
                    form.inline.deploy data-api=(format!("{path}/deploys")) data-then=(format!("go:/groups/{}/jobs/{{id}}", enc(g))) {
                        input type="hidden" name="idempotency_key" value=(uuid::Uuid::new_v4().to_string());
                        label.inline-label { span.sr { "Ref to deploy" }
                            input name="git_ref" data-optional placeholder=(env.git_ref) size="12" aria-label="Ref to deploy (empty: the environment's ref)";
                        }
                        button.primary type="submit" { "Deploy (canary)" }
                        (form_error())
                    }
                }
            }
            dl.facts {
                div { dt { "Ref" } dd { code { (env.git_ref) } } }
                div { dt { "Zones" } dd { (list_or(&env.zones, "none")) } }
                div { dt { "Last result" } dd {
                    @match &env.last_deploy {
                        None => span.muted { "never deployed" },
                        Some(d) => {
                            (badge(&d.outcome)) " " (when(d.finished_at.as_deref()))
                            @if !d.job_id.is_empty() { " · " a href=(format!("/groups/{}/jobs/{}", enc(g), enc(&d.job_id))) { "job log" } }
                            @if !d.error.is_empty() { div.error-text { (d.error) } }
                        },
                    }
                } }
                div { dt { "Blocked" } dd { (blocked(env, &path, manage)) } }
                div { dt { "Sign-in" } dd { (sign_in(env)) } }
                div { dt { "Surface changes" } dd data-surface-changes=(env.surface_changes) {
                    @if env.surface_changes == "review" { "reviewed: a deploy that changes what the tools say waits for a group admin" }
                    @else { "allowed: a deploy logs how the tools changed and goes on" }
                } }
                div { dt { "Calls" } dd {
                    a href=(format!("/groups/{}/calls?environment={}", enc(g), enc(&env.name))) { "calls" }
                    " · "
                    a href=(format!("/groups/{}/usage?environment={}", enc(g), enc(&env.name))) { "usage" }
                } }
                div { dt { "Call arguments" } dd data-record-arguments=(env.record_arguments) {
                    @if env.record_arguments { "recorded (secrets redacted) from the next deploy on" }
                    @else { "not recorded: call records say who called what, never with what" }
                } }
            }
            @if manage && !env.deleting {
                details.edit {
                    summary { "Edit environment" }
                    form.grid data-api=(path) data-method="PATCH" {
                        label { "Ref" input name="git_ref" value=(env.git_ref) required; }
                        (zone_checks(data, "zones", &env.zones))
                        label.check { input type="checkbox" name="verbose" data-kind="bool" checked[env.verbose]; "Verbose logging" }
                        label.check { input type="checkbox" name="record_arguments" data-kind="bool" checked[env.record_arguments]; "Record call arguments (from the next deploy)" }
                        label { "Surface changes"
                            select name="surface_changes" {
                                option value="review" selected[env.surface_changes == "review"] { "review: a deploy that changes the tools' surface waits for a group admin" }
                                option value="allow" selected[env.surface_changes != "review"] { "allow: logged, the deploy goes on" }
                            }
                        }
                        label { "Blocked (packages or tools)" textarea name="blocked" data-kind="list" rows="2" { (env.blocked.join("\n")) } small.hint { "One per line: " code { "pkg" } " or " code { "pkg.tool" } "." } }
                        (form_error())
                        div.actions { button.primary type="submit" { "Save" } }
                    }
                }
                details.edit {
                    summary { "MCP sign-in and who may call what" }
                    (auth_form(env, &path))
                    (action_button("DELETE", &path, "Delete environment", "danger",
                        Some(&format!("Delete environment {}? Its zones' deployments for the group are torn down.", env.name))))
                }
            }
        }
    }
}

/// The mode (and whether it is the platform's), the authorization servers, scopes, rules and
/// rate, and where clients read the resource metadata.
fn sign_in(env: &Environment) -> Markup {
    let auth = &env.auth;
    let mode = match auth.mode.as_str() {
        "oauth" => "OAuth 2.1 tokens",
        "both" => "MCP keys or OAuth 2.1 tokens",
        _ => "MCP keys",
    };
    html! {
        span.auth-mode data-mode=(auth.mode) { (mode) }
        @if auth.inherited { " " span.muted { "(platform default)" } }
        @if auth.mode != "keys" {
            div.small { "Issuers: " (list_or(&auth.issuers, "none: no token can be accepted")) }
            div.small { "Scopes: " (list_or(&auth.scopes, "any")) }
            @if let Some(url) = &auth.metadata_url { div.small { "Metadata: " code { (url) } } }
        }
        div.small {
            @if auth.rules.is_empty() { "Every authenticated caller may use every tool." }
            @else { (auth.rules.len()) " rule(s) decide who may use what." }
            @if auth.calls_per_second > 0 { " At most " (auth.calls_per_second) " calls per second per caller." }
        }
    }
}

/// Sets the whole auth setting (`PUT …/auth`).
fn auth_form(env: &Environment, path: &str) -> Markup {
    let auth = &env.auth;
    let mode = if auth.inherited { "" } else { auth.mode.as_str() };
    html! {
        form.grid data-api=(format!("{path}/auth")) data-method="PUT" {
            label { "Clients authenticate with"
                select name="mode" data-optional {
                    option value="" selected[mode.is_empty()] { "the platform default" }
                    option value="keys" selected[mode == "keys"] { "MCP keys" }
                    option value="oauth" selected[mode == "oauth"] { "OAuth 2.1 access tokens" }
                    option value="both" selected[mode == "both"] { "either" }
                }
            }
            label { "Issuers (authorization servers)" textarea name="issuers" data-kind="list" rows="2" { (auth.issuers.join("\n")) } small.hint { "One issuer URL per line; empty: the platform's." } }
            label { "Scopes" textarea name="scopes" data-kind="list" rows="1" { (auth.scopes.join("\n")) } small.hint { "A token must hold one of them; empty: the platform's (or any)." } }
            label { "Rules (JSON)" textarea name="rules" data-kind="json" rows="4" { (json(&auth.rules)) } small.hint { "A list of " code { "{\"groups\": [\"payments\"], \"allow\": [\"payments\"]}" } ": a caller matching every condition set (subjects, groups, roles, scopes, or keys by name or id) may use the packages or tools it allows; " code { "[]" } ": everyone may use everything." } }
            label { "Calls per second per caller" input name="calls_per_second" data-kind="int" type="number" min="0" value=(auth.calls_per_second); small.hint { "0: unlimited." } }
            (form_error())
            div.actions { button.primary type="submit" { "Save sign-in" } }
        }
    }
}

fn blocked(env: &Environment, path: &str, manage: bool) -> Markup {
    if env.blocked.is_empty() {
        return html! { span.muted { "nothing" } };
    }
    html! {
        ul.chips {
            @for item in &env.blocked {
                li.blocked {
                    code { (item) }
                    @if manage {
                        @let rest: Vec<&String> = env.blocked.iter().filter(|b| *b != item).collect();
                        form.inline data-api=(path) data-method="PATCH" {
                            input type="hidden" name="blocked" data-kind="json" value=(json(&rest));
                            button.link.small type="submit" aria-label=(format!("Unblock {item}")) { "unblock" }
                        }
                    }
                }
            }
        }
    }
}

/// A checkbox per zone that exists (the ones in `checked` ticked).
pub fn zone_checks(data: &Data, name: &str, checked: &[String]) -> Markup {
    let zones = data.zone_names();
    html! {
        fieldset {
            legend { "Zones" }
            @if zones.is_empty() { p.muted.small { "No zones exist yet: a super admin adds them on the " a href="/zones" { "Zones" } " page." } }
            @for z in &zones {
                label.check { input type="checkbox" name=(name) value=(z) data-kind="checks" checked[checked.contains(z)]; (z) }
            }
        }
    }
}

fn add_environment(data: &Data) -> Markup {
    let g = &data.group.name;
    html! {
        details.card #add-environment open[data.environments().is_empty()] {
            summary { h3 { "Add environment" } }
            form.grid data-api=(format!("/api/groups/{}/environments", enc(g))) {
                label { "Name" input name="name" required pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?" placeholder="prod"; }
                label { "Ref" input name="git_ref" data-optional placeholder=(data.group.default_ref); small.hint { "Branch, tag or commit; the group's default when empty." } }
                (zone_checks(data, "zones", &[]))
                label.check { input type="checkbox" name="verbose" data-kind="bool"; "Verbose logging" }
                label.check { input type="checkbox" name="record_arguments" data-kind="bool"; "Record call arguments" }
                (form_error())
                div.actions { button.primary type="submit" { "Add environment" } }
            }
        }
    }
}
