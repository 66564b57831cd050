//! Audit: the audit log filtered by group, actor (a user id or a service actor such as
//! `scheduler`) and time. Super admins read the whole log; everyone else reads the log of a
//! group they belong to (the API decides which).

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::Console;
use super::api::enc;
use super::layout::{Nav, badge, empty, render, section_failed, when};
use super::model::{AuditEntry, Group, Page};
use super::viewer::Viewer;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Filter {
    group: String,
    actor: String,
    /// `datetime-local` values, read as UTC.
    since: String,
    until: String,
    action: String,
    page_token: String,
}

/// `2026-12-01T10:00` (what `datetime-local` sends) as RFC 3339 in UTC; RFC 3339 as is.
fn rfc3339(local: &str) -> Option<String> {
    let local = local.trim();
    match local.len() {
        0 => None,
        16 => Some(format!("{local}:00Z")),
        19 => Some(format!("{local}Z")),
        _ => Some(local.to_owned()),
    }
}

impl Filter {
    fn query(&self, with_group: bool) -> String {
        let mut q = vec!["page_size=100".to_owned()];
        let mut add = |k: &str, v: &str| {
            if !v.is_empty() {
                q.push(format!("{k}={}", enc(v)));
            }
        };
        if with_group {
            add("group", &self.group);
        }
        add("actor", self.actor.trim());
        add("since", &rfc3339(&self.since).unwrap_or_default());
        add("until", &rfc3339(&self.until).unwrap_or_default());
        add("action_prefix", self.action.trim());
        add("page_token", &self.page_token);
        q.join("&")
    }

    fn next_page(&self, token: &str) -> String {
        let params = [
            ("group", self.group.as_str()),
            ("actor", &self.actor),
            ("since", &self.since),
            ("until", &self.until),
            ("action", &self.action),
            ("page_token", token),
        ];
        let query: Vec<String> = params
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={}", enc(v)))
            .collect();
        format!("/audit?{}", query.join("&"))
    }
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Query(mut filter): Query<Filter>,
) -> Response {
    let everything = viewer.super_admin();
    let groups: Vec<String> = if everything {
        console
            .api
            .get::<Page<Group>>(&viewer.ctx, "/api/groups?page_size=1000")
            .await
            .map(|p| p.items.into_iter().map(|g| g.name).collect())
            .unwrap_or_default()
    } else {
        viewer.groups().map(str::to_owned).collect()
    };
    if !everything && filter.group.is_empty() {
        filter.group = groups.first().cloned().unwrap_or_default();
    }
    let path = if everything {
        Some(format!("/api/audit?{}", filter.query(true)))
    } else if filter.group.is_empty() {
        None
    } else {
        Some(format!("/api/groups/{}/audit?{}", enc(&filter.group), filter.query(false)))
    };
    let entries = match &path {
        Some(path) => Some(console.api.get::<Page<AuditEntry>>(&viewer.ctx, path).await),
        None => None,
    };
    let body = html! {
        h1 { "Audit" }
        p.lead { "Who did what, newest first. Service actors such as " code { "scheduler" } " and " code { "deployer" } " appear by name." }
        (filters(&filter, &groups, everything))
        @match &entries {
            None => (empty("No group to show.", html! { "You are not a member of any group yet." })),
            Some(Err(f)) => (section_failed("the audit log", f)),
            Some(Ok(p)) if p.items.is_empty() => (empty("No entries match.", html! { "Widen the time range or clear the actor." })),
            Some(Ok(p)) => {
                (table(&p.items, &viewer))
                @if !p.next_page_token.is_empty() {
                    p { a.button href=(filter.next_page(&p.next_page_token)) { "Older entries →" } }
                }
            },
        }
    };
    render(&viewer, Nav::Audit, "Audit", body)
}

fn filters(filter: &Filter, groups: &[String], everything: bool) -> Markup {
    html! {
        form.filters method="get" action="/audit" {
            label { "Group"
                select name="group" {
                    @if everything { option value="" selected[filter.group.is_empty()] { "every group" } }
                    @for g in groups { option value=(g) selected[filter.group == *g] { (g) } }
                }
            }
            label { "Actor"
                input name="actor" value=(filter.actor) list="actors" placeholder="user id or scheduler";
                datalist #actors { @for a in ramen_access::SERVICE_ACTORS { option value=(a) {} } }
            }
            label { "Action prefix" input name="action" value=(filter.action) placeholder="deploy."; }
            label { "Since (UTC)" input type="datetime-local" name="since" value=(filter.since); }
            label { "Until (UTC)" input type="datetime-local" name="until" value=(filter.until); }
            div.actions { button.primary type="submit" { "Filter" } a.button href="/audit" { "Clear" } }
        }
    }
}

fn table(entries: &[AuditEntry], viewer: &Viewer) -> Markup {
    html! {
        div.table-wrap {
            table #audit {
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "Actor" } th scope="col" { "Action" }
                    th scope="col" { "Group" } th scope="col" { "Target" } th scope="col" { "Outcome" } th scope="col" { "Details" }
                } }
                tbody {
                    @for e in entries {
                        tr data-actor=(e.actor) {
                            td { (when(e.at.as_deref())) }
                            td { code { (e.actor) } @if e.actor == viewer.user.id { " " span.muted { "(you)" } } }
                            td { code { (e.action) } }
                            td { (e.group) }
                            td.wrap { (e.target) }
                            td { (badge(&e.outcome)) }
                            td.wrap.small {
                                @for (k, v) in &e.details { span.kv { span.muted { (k) "=" } (v) } " " }
                            }
                        }
                    }
                }
            }
        }
    }
}
