//! The group page, where a group lives: environments (Add environment, Deploy (canary)),
//! deploy jobs, the Zone actions card per zone with its workers, the packages each zone
//! reported, MCP keys, secrets, members, service-account rules, the worker image and
//! restrictions, and deleting the group. Every section is read through the API as the viewer;
//! a section the API refuses shows its refusal, and forms are offered only where the one rule
//! allows the viewer to use them.

pub mod calls;
pub mod deletion;
mod environments;
pub mod jobs;
mod packages;
mod people;
mod settings;
pub mod usage;
mod zones;

use axum::extract::{Path, State};
use axum::response::Response;
use futures::future::join_all;
use maud::{Markup, html};

use super::Console;
use super::api::{Failure, enc};
use super::layout::{Nav, badge, failure_page, list_or, render};
use super::model::*;
use super::viewer::Viewer;

pub type Read<T> = Result<T, Failure>;

/// What one zone of the group reported.
pub struct ZoneReads {
    pub workers: Read<Page<Worker>>,
    pub packages: Read<Page<Package>>,
}

/// Everything the page shows, read in parallel.
pub struct Data {
    pub group: Group,
    pub envs: Read<Page<Environment>>,
    pub jobs: Read<Page<Job>>,
    pub placements: Read<Page<Placement>>,
    pub zones: Read<Page<ZoneSummary>>,
    pub keys: Read<Page<Key>>,
    pub secrets: Read<Page<Secret>>,
    pub members: Read<Page<Membership>>,
    pub service_account: Read<ServiceAccount>,
    pub load: Read<Page<LoadCell>>,
    /// Per placement, in its order: workers and packages.
    pub per_zone: Vec<ZoneReads>,
}

impl Data {
    pub fn environments(&self) -> &[Environment] {
        self.envs.as_ref().map(|p| p.items.as_slice()).unwrap_or_default()
    }

    pub fn zone_names(&self) -> Vec<String> {
        self.zones
            .as_ref()
            .map(|z| z.items.iter().map(|z| z.name.clone()).collect())
            .unwrap_or_default()
    }
}

async fn read(console: &Console, viewer: &Viewer, name: &str) -> Result<Data, Failure> {
    let api = &console.api;
    let ctx = &viewer.ctx;
    let g = format!("/api/groups/{}", enc(name));
    // The per-zone reads need the placements, not the rest: they run as soon as the
    // placements are in, beside the other reads, so the page waits for the slowest chain.
    let placed = async {
        let placements = api.get::<Page<Placement>>(ctx, format!("{g}/zones?page_size=1000")).await;
        let zones = placements.as_ref().map(|p| p.items.as_slice()).unwrap_or_default();
        let zone_reads = zones.iter().map(|p| {
            let z = format!("{g}/zones/{}", enc(&p.zone));
            async move {
                tokio::join!(
                    api.get::<Page<Worker>>(ctx, format!("{z}/workers?page_size=1000")),
                    api.get::<Page<Package>>(ctx, format!("{z}/packages?page_size=1000")),
                )
            }
        });
        let per_zone: Vec<ZoneReads> = join_all(zone_reads)
            .await
            .into_iter()
            .map(|(workers, packages)| ZoneReads { workers, packages })
            .collect();
        (placements, per_zone)
    };
    let (
        group,
        envs,
        jobs,
        (placements, per_zone),
        zones,
        keys,
        secrets,
        members,
        service_account,
        load,
    ) = tokio::join!(
        api.get::<Group>(ctx, &g),
        api.get::<Page<Environment>>(ctx, format!("{g}/environments?page_size=1000")),
        api.get::<Page<Job>>(ctx, format!("{g}/jobs?page_size=15")),
        placed,
        api.get::<Page<ZoneSummary>>(ctx, "/api/zones?page_size=1000"),
        api.get::<Page<Key>>(ctx, format!("{g}/keys?page_size=1000")),
        api.get::<Page<Secret>>(ctx, format!("{g}/secrets?page_size=1000")),
        api.get::<Page<Membership>>(ctx, format!("{g}/members?page_size=1000")),
        api.get::<ServiceAccount>(ctx, format!("{g}/service-account")),
        api.get::<Page<LoadCell>>(ctx, format!("/api/load?group={}&page_size=1000", enc(name))),
    );
    let group = group?;
    Ok(Data {
        group,
        envs,
        jobs,
        placements,
        zones,
        keys,
        secrets,
        members,
        service_account,
        load,
        per_zone,
    })
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Response {
    let data = match read(&console, &viewer, &name).await {
        Ok(data) => data,
        Err(f) => return failure_page(&viewer, Nav::Groups, &format!("Group {name}"), &f),
    };
    let body = html! {
        (header(&data.group))
        nav.tabs aria-label="Sections" {
            ul {
                @for (id, label) in SECTIONS { li { a href=(format!("#{id}")) { (label) } } }
                li { a href=(format!("/groups/{}/calls", enc(&data.group.name))) { "Calls" } }
                li { a href=(format!("/groups/{}/usage", enc(&data.group.name))) { "Usage" } }
            }
        }
        (environments::section(&data, &viewer))
        (jobs::section(&data))
        (zones::section(&data, &viewer))
        (packages::section(&data, &viewer))
        (people::keys(&data, &viewer))
        (people::secrets(&data, &viewer))
        (people::members(&data, &viewer))
        (people::service_account(&data, &viewer))
        (settings::section(&data, &viewer))
    };
    render(&viewer, Nav::Groups, &data.group.name, body)
}

const SECTIONS: [(&str, &str); 9] = [
    ("environments", "Environments"),
    ("jobs", "Deploy jobs"),
    ("zones", "Zones"),
    ("packages", "Packages"),
    ("keys", "MCP keys"),
    ("secrets", "Secrets"),
    ("members", "Members"),
    ("service-account", "Service account"),
    ("settings", "Settings"),
];

fn header(group: &Group) -> Markup {
    html! {
        p.crumbs { a href="/groups" { "Groups" } " / " }
        div.title-row {
            h1 { (group.name) }
            (badge(&group.status))
        }
        @if group.status == "deleting" {
            p.notice.warn role="status" {
                "This group is being deleted. "
                a href=(format!("/groups/{}/deletion", enc(&group.name))) { "Follow the teardown" }
            }
        }
        dl.facts {
            div { dt { "Repository" } dd { code { (group.repo_url) } } }
            div { dt { "Default ref" } dd { code { (group.default_ref) } } }
            div { dt { "Bucket prefix" } dd { code { (group.bucket_prefix) } } }
            div { dt { "MCP URL" } dd { code { "/mcp/" (group.name) "/<environment>" } } }
            div { dt { "Allowed zones" } dd { (list_or(&group.restrictions.allowed_zones, "any zone")) } }
        }
    }
}

/// A section with its heading and anchor.
fn block(id: &str, title: &str, intro: Markup, body: Markup) -> Markup {
    html! {
        section.block id=(id) aria-labelledby=(format!("{id}-title")) {
            h2 id=(format!("{id}-title")) { (title) }
            (intro)
            (body)
        }
    }
}

/// What a group's Calls and Usage pages read besides their own data: the group (a failure is
/// the page's: the group is gone or not the viewer's) and its environments' names (a failure
/// only empties the filter's list).
pub async fn group_and_environments(
    console: &Console,
    viewer: &Viewer,
    group: &str,
) -> Result<Vec<String>, Failure> {
    let g = format!("/api/groups/{}", enc(group));
    let (read, envs) = tokio::join!(
        console.api.get::<Group>(&viewer.ctx, &g),
        console
            .api
            .get::<Page<Environment>>(&viewer.ctx, format!("{g}/environments?page_size=1000")),
    );
    read?;
    Ok(envs.map(|p| p.items.into_iter().map(|e| e.name).collect()).unwrap_or_default())
}

/// The Calls and Usage filters' environment choice: every environment, or one of `envs`.
pub fn environment_select(selected: &str, envs: &[String]) -> Markup {
    html! {
        label { "Environment"
            select name="environment" {
                option value="" selected[selected.is_empty()] { "every environment" }
                @for e in envs { option value=(e) selected[selected == e] { (e) } }
            }
        }
    }
}

/// The head of a group's Calls and Usage pages: the way back, and the group's views with the
/// current one marked.
pub fn views_header(group: &str, current: &str) -> Markup {
    let g = enc(group);
    let views = [
        ("overview", "Overview", format!("/groups/{g}")),
        ("calls", "Calls", format!("/groups/{g}/calls")),
        ("usage", "Usage", format!("/groups/{g}/usage")),
    ];
    html! {
        p.crumbs { a href="/groups" { "Groups" } " / " a href=(format!("/groups/{g}")) { (group) } " /" }
        h1 { (group) }
        nav.tabs aria-label="Group views" {
            ul {
                @for (id, label, href) in &views {
                    li { a href=(href) aria-current=[(*id == current).then_some("page")] { (label) } }
                }
            }
        }
    }
}
