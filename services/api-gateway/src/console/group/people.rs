//! Who and what may reach the group: MCP keys (the plaintext shown once, on create; revoke),
//! secrets (names and scopes only — values are write-only), members and roles, and the
//! service-account permissions of the group's workers.

use maud::{Markup, html};
use ramen_proto::auth::v1::Action;

use super::{Data, block};
use crate::console::api::enc;
use crate::console::layout::{
    action_button, badge, empty, form_error, list_or, section_failed, when,
};
use crate::console::viewer::Viewer;

fn env_checks(data: &Data, name: &str) -> Markup {
    html! {
        fieldset {
            legend { "Environments" }
            @for e in data.environments() { label.check { input type="checkbox" name=(name) value=(e.name) data-kind="checks"; (e.name) } }
            small.hint { "None checked: every environment." }
        }
    }
}

pub fn keys(data: &Data, viewer: &Viewer) -> Markup {
    let g = &data.group.name;
    let manage = viewer.can(g, Action::ManageKeys);
    let body = html! {
        @match &data.keys {
            Err(f) => (section_failed("MCP keys", f)),
            Ok(k) if k.items.is_empty() => (empty("No MCP keys.", html! {
                @if manage { "Create one below and give it to the MCP client as " code { "Authorization: Bearer <key>" } "." }
                @else { "A group admin creates keys." }
            })),
            Ok(k) => div.table-wrap { table #key-list {
                thead { tr { th scope="col" { "Name" } th scope="col" { "Key" } th scope="col" { "Environments" } th scope="col" { "Zones" }
                    th scope="col" { "Expires" } th scope="col" { "Last used" } th scope="col" { "Created" } @if manage { th scope="col" { span.sr { "Revoke" } } } } }
                tbody { @for key in &k.items {
                    tr data-key=(key.name) {
                        th scope="row" { (key.name) }
                        td { code { (key.prefix) "…" } }
                        td { (list_or(&key.environments, "all")) }
                        td { (list_or(&key.zones, "all")) }
                        td { @if key.expires_at.is_some() { (when(key.expires_at.as_deref())) } @else { span.muted { "never" } } }
                        td data-last-used { @if key.last_used_at.is_some() { (when(key.last_used_at.as_deref())) } @else { span.muted { "never" } } }
                        td { (when(key.created_at.as_deref())) }
                        @if manage { td.actions {
                            @if key.revoked_at.is_some() { (badge("revoked")) }
                            @else { (action_button("DELETE", &format!("/api/groups/{}/keys/{}", enc(g), enc(&key.id)), "Revoke", "danger small",
                                Some(&format!("Revoke key {}? Clients using it are refused at once.", key.name)))) }
                        } }
                    }
                } }
            } },
        }
        @if manage {
            details.card #create-key {
                summary { h3 { "Create MCP key" } }
                form.grid data-api=(format!("/api/groups/{}/keys", enc(g))) data-then="show" {
                    label { "Name" input name="name" required placeholder="laptop"; }
                    (env_checks(data, "environments"))
                    fieldset {
                        legend { "Zones" }
                        @for z in data.zone_names() { label.check { input type="checkbox" name="zones" value=(z) data-kind="checks"; (z) } }
                        small.hint { "None checked: every zone." }
                    }
                    label { "Expires (UTC)" input type="datetime-local" name="expires_at" data-kind="datetime" data-optional; small.hint { "Empty: never." } }
                    (form_error())
                    div.actions { button.primary type="submit" { "Create key" } }
                    div.result.reveal data-result hidden role="status" {
                        p { strong { "Copy this key now: it is not shown again." } }
                        p { code.secret data-field="plaintext" {} " " button type="button" data-copy="plaintext" { "Copy" } }
                        p { button type="button" data-reload { "Done" } }
                    }
                }
            }
        }
    };
    block(
        "keys",
        "MCP keys",
        html! { p.muted { "Keys MCP clients present to the edge. Only a prefix is stored for display." } },
        body,
    )
}

pub fn secrets(data: &Data, viewer: &Viewer) -> Markup {
    let g = &data.group.name;
    let manage = viewer.can(g, Action::ManageSecrets);
    let body = html! {
        @match &data.secrets {
            Err(f) => (section_failed("secrets", f)),
            Ok(s) if s.items.is_empty() => (empty("No secrets.", html! { "Secrets reach workers as environment variables at deploy; a private repo needs " code { "GITHUB_TOKEN" } "." })),
            Ok(s) => div.table-wrap { table #secret-list {
                thead { tr { th scope="col" { "Name" } th scope="col" { "Environment" } th scope="col" { "Zone" } th scope="col" { "Updated" } th scope="col" { "By" } @if manage { th scope="col" { span.sr { "Delete" } } } } }
                tbody { @for s in &s.items {
                    tr data-secret=(s.name) {
                        th scope="row" { code { (s.name) } }
                        td { @if s.environment.is_empty() { span.muted { "every environment" } } @else { (s.environment) } }
                        td { @if s.zone.is_empty() { span.muted { "every zone" } } @else { (s.zone) } }
                        td { (when(s.updated_at.as_deref())) }
                        td { code.small { (s.updated_by) } }
                        @if manage { td.actions {
                            (action_button("DELETE", &format!("/api/groups/{}/secrets/{}?environment={}&zone={}", enc(g), enc(&s.name), enc(&s.environment), enc(&s.zone)),
                                "Delete", "danger small", Some(&format!("Delete secret {}? The next deploy no longer has it.", s.name))))
                        } }
                    }
                } }
            } },
        }
        @if manage {
            details.card #set-secret {
                summary { h3 { "Set secret" } }
                form.grid data-api=(format!("/api/groups/{}/secrets/{{name}}", enc(g))) data-method="PUT" {
                    label { "Name" input name="name" required pattern="[A-Za-z_][A-Za-z0-9_]*" placeholder="API_TOKEN"; }
                    label { "Value" input name="value" type="password" autocomplete="off" required; small.hint { "Write-only: never shown again." } }
                    label { "Environment" select name="environment" { option value="" { "every environment" } @for e in data.environments() { option value=(e.name) { (e.name) } } } }
                    label { "Zone" select name="zone" { option value="" { "every zone" } @for z in data.zone_names() { option value=(z) { (z) } } } }
                    (form_error())
                    div.actions { button.primary type="submit" { "Save secret" } }
                }
            }
        }
    };
    block(
        "secrets",
        "Secrets",
        html! { p.muted { "Names and scopes only; values never leave the platform except into a deploy." } },
        body,
    )
}

pub fn members(data: &Data, viewer: &Viewer) -> Markup {
    let g = &data.group.name;
    let manage = viewer.can(g, Action::ManageMembers);
    let body = html! {
        @match &data.members {
            Err(f) => (section_failed("members", f)),
            Ok(m) if m.items.is_empty() => (empty("No members.", html! { "Add the group's admins and members by email." })),
            Ok(m) => div.table-wrap { table #member-list {
                thead { tr { th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "Since" } @if manage { th scope="col" { span.sr { "Remove" } } } } }
                tbody { @for m in &m.items {
                    tr data-member=(m.email) {
                        th scope="row" { (m.email) @if m.user_id == viewer.user.id { " " span.muted { "(you)" } } }
                        td { span.badge.muted { (m.role.as_deref().unwrap_or("?")) } }
                        td { (when(m.created_at.as_deref())) }
                        @if manage { td.actions {
                            (action_button("DELETE", &format!("/api/groups/{}/members/{}", enc(g), enc(&m.user_id)), "Remove", "danger small",
                                Some(&format!("Remove {} from {}? They lose access at once.", m.email, g))))
                        } }
                    }
                } }
            } },
        }
        @if manage {
            form.row #add-member data-api=(format!("/api/groups/{}/members", enc(g))) {
                label { "Email" input name="email" type="email" required placeholder="someone@example.com"; }
                label { "Role" select name="role" { option value="member" { "member (reads)" } option value="admin" { "admin (runs the group)" } } }
                button.primary type="submit" { "Add member" }
                (form_error())
            }
        }
    };
    block(
        "members",
        "Members and roles",
        html! { p.muted { "Members read the group; admins run it (environments, deploys, zone actions, keys, secrets, members). Someone without a ramen account yet is a member from the moment a super admin creates their account." } },
        body,
    )
}

pub fn service_account(data: &Data, viewer: &Viewer) -> Markup {
    let g = &data.group.name;
    let manage = viewer.can(g, Action::ManageServiceAccount);
    let body = html! {
        @match &data.service_account {
            Err(f) => (section_failed("service-account rules", f)),
            Ok(sa) => {
                @if sa.rules.is_empty() { (empty("No permissions.", html! { "The group's workers get no cloud permissions beyond the default." })) }
                @else {
                    div.table-wrap { table #sa-rules {
                        thead { tr { th scope="col" { "Provider" } th scope="col" { "Permissions" } th scope="col" { "Resources" } th scope="col" { "Why" } } }
                        tbody { @for r in &sa.rules { tr {
                            td { (r.provider) } td { (list_or(&r.permissions, "none")) } td { (list_or(&r.resources, "every resource")) } td { (r.description) }
                        } } }
                    } }
                }
                @if manage {
                    details.edit {
                        summary { "Edit rules (JSON)" }
                        form.stack data-api=(format!("/api/groups/{}/service-account", enc(g))) data-method="PUT" {
                            input type="hidden" name="expected_version" data-kind="int" value=(sa.version);
                            label { "Rules"
                                textarea.code name="rules" data-kind="json" rows="6" spellcheck="false" {
                                    (serde_json::to_string_pretty(&sa.rules).unwrap_or_default())
                                }
                                small.hint { "A list of " code { "{\"provider\": \"gcp|aws|local\", \"permissions\": [...], \"resources\": [...], \"description\": \"...\"}" } ". Each rule must stay inside the bounds a super admin sets (" code { "GET /api/service-account-bounds" } "): by default no wildcards, no IAM or owner/editor roles, and every rule names its resources." }
                            }
                            (form_error())
                            div.actions { button.primary type="submit" { "Save rules" } }
                        }
                    }
                }
            },
        }
    };
    block(
        "service-account",
        "Service-account permissions",
        html! { p.muted { "Cloud roles or actions the group's workers hold in every zone." } },
        body,
    )
}
