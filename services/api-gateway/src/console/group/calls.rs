//! A group's Calls page: every MCP call its nodes answered, newest first, filtered by
//! environment, tool (resource, prompt), caller and outcome, a page at a time. The arguments
//! show only where the environment records them.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use crate::console::Console;
use crate::console::api::enc;
use crate::console::layout::{
    Nav, badge, empty, failure_page, pretty, render, section_failed, when,
};
use crate::console::model::{Call, Page};
use crate::console::viewer::Viewer;
use ramen_call_records::Outcome;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Filter {
    environment: String,
    tool: String,
    caller: String,
    outcome: String,
    page_token: String,
}

impl Filter {
    /// The query string with these filters (and `page_token` when given).
    fn query(&self, page_token: &str) -> String {
        [
            ("environment", self.environment.trim()),
            ("tool", self.tool.trim()),
            ("caller", self.caller.trim()),
            ("outcome", self.outcome.as_str()),
            ("page_token", page_token),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
    }
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Path(group): Path<String>,
    Query(filter): Query<Filter>,
) -> Response {
    let calls_path = format!(
        "/api/groups/{}/calls?page_size=50&{}",
        enc(&group),
        filter.query(&filter.page_token)
    );
    let (read, calls) = tokio::join!(
        super::group_and_environments(&console, &viewer, &group),
        console.api.get::<Page<Call>>(&viewer.ctx, calls_path),
    );
    let envs = match read {
        Ok(envs) => envs,
        Err(f) => return failure_page(&viewer, Nav::Groups, &format!("Calls of {group}"), &f),
    };
    let body = html! {
        (super::views_header(&group, "calls"))
        p.lead { "Every tools/call, resources/read and prompts/get the group's nodes answered, newest first: who called, how long it took, how it ended. Arguments only where the environment records them." }
        (filters(&group, &filter, &envs))
        section.block #calls aria-labelledby="calls-title" {
            h2.sr #calls-title { "Calls" }
            @match &calls {
                Err(f) => (section_failed("the calls", f)),
                Ok(p) if p.items.is_empty() => (empty("No calls match.", html! {
                    "Calls appear here a few seconds after an MCP client makes them; clear a filter to see more."
                })),
                Ok(p) => {
                    (table(&p.items))
                    @if !p.next_page_token.is_empty() {
                        p { a.button href=(format!("/groups/{}/calls?{}", enc(&group), filter.query(&p.next_page_token))) { "Older calls →" } }
                    }
                },
            }
        }
    };
    render(&viewer, Nav::Groups, &format!("Calls · {group}"), body)
}

fn filters(group: &str, filter: &Filter, envs: &[String]) -> Markup {
    let action = format!("/groups/{}/calls", enc(group));
    html! {
        form.filters method="get" action=(action) {
            (super::environment_select(&filter.environment, envs))
            label { "Tool, resource or prompt" input name="tool" value=(filter.tool) placeholder="notes.add"; }
            label { "Caller id" input name="caller" value=(filter.caller) placeholder="key id or token subject"; }
            label { "Outcome"
                select name="outcome" {
                    option value="" selected[filter.outcome.is_empty()] { "every outcome" }
                    @for o in Outcome::ALL.map(Outcome::as_str) { option value=(o) selected[filter.outcome == o] { (o.replace('_', " ")) } }
                }
            }
            div.actions { button.primary type="submit" { "Filter" } a.button href=(action) { "Clear" } }
        }
    }
}

fn table(calls: &[Call]) -> Markup {
    html! {
        div.table-wrap {
            table #calls-table {
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "Environment" } th scope="col" { "Caller" }
                    th scope="col" { "Method" } th scope="col" { "Target" } th scope="col" { "Outcome" } th scope="col" { "Duration" }
                } }
                tbody {
                    @for c in calls {
                        tr data-call=(c.id) {
                            td { (when(c.at.as_deref())) }
                            td { (c.environment) br; span.muted.small { (c.zone) } }
                            td.wrap { (caller(c)) }
                            td { code { (c.method) } }
                            td.wrap {
                                code { (c.target) }
                                @if let Some(args) = &c.arguments {
                                    details.args { summary { "arguments" } pre.schema { (pretty(args)) } }
                                }
                            }
                            td {
                                (badge(&c.outcome))
                                @if c.error_code != 0 { " " span.muted.small { (c.error_code) } }
                            }
                            td.num { (super::usage::micros(c.duration_us)) }
                        }
                    }
                }
            }
        }
    }
}

fn caller(c: &Call) -> Markup {
    match (c.caller_name.as_str(), c.caller_id.as_str()) {
        ("", "") => html! { span.muted { "anonymous" } },
        ("", id) => html! { code { (id) } },
        (name, id) => html! { span title=(id) { (name) } },
    }
}
