//! `/api/groups/{group}/zones/{zone}/packages`: what the zone reported after its last deploy —
//! each package's tools, resources and prompts with their schemas — and disabling a package on
//! that zone (applied live at the nodes: it vanishes from lists and answers -32601).

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{Page, PageQuery, next_token, time};
use super::zone_views::PlacementView;
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Params;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(list_packages)),
        route(Access::GroupAdmin(Action::ZoneActions), routes!(disable_package)),
        route(Access::GroupAdmin(Action::ZoneActions), routes!(enable_package)),
    ]
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolView {
    /// `<package>.<tool>`.
    pub name: String,
    pub title: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured output; null when none.
    pub output_schema: Value,
    /// MCP tool annotations; null when none.
    pub annotations: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResourceView {
    /// The URI, or the RFC 6570 template of a resource template.
    pub uri: String,
    pub template: bool,
    pub name: String,
    pub title: String,
    pub description: String,
    pub mime_type: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PromptArgumentView {
    pub name: String,
    pub description: String,
    pub required: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PromptView {
    pub name: String,
    pub title: String,
    pub description: String,
    pub arguments: Vec<PromptArgumentView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PackageView {
    pub zone: String,
    /// Importable package name; tool and prompt names are prefixed with it.
    pub name: String,
    /// Disabled on this zone.
    pub disabled: bool,
    /// Commit the report came from.
    pub commit: String,
    pub reported_at: Option<String>,
    pub tools: Vec<ToolView>,
    pub resources: Vec<ResourceView>,
    pub prompts: Vec<PromptView>,
    /// Set when the package failed to load (its lists are then empty): one line.
    pub error: Option<String>,
    /// The Python traceback of that failure.
    pub traceback: Option<String>,
}

fn json(text: &str) -> Value {
    if text.is_empty() { Value::Null } else { serde_json::from_str(text).unwrap_or(Value::Null) }
}

fn tool(t: common::ToolInfo) -> ToolView {
    ToolView {
        input_schema: json(&t.input_schema_json),
        output_schema: json(&t.output_schema_json),
        annotations: json(&t.annotations_json),
        name: t.name,
        title: t.title,
        description: t.description,
    }
}

fn prompt(p: common::PromptInfo) -> PromptView {
    let arguments = p
        .arguments
        .into_iter()
        .map(|a| PromptArgumentView {
            name: a.name,
            description: a.description,
            required: a.required,
        })
        .collect();
    PromptView { name: p.name, title: p.title, description: p.description, arguments }
}

impl From<pb::ZonePackage> for PackageView {
    fn from(p: pb::ZonePackage) -> Self {
        let report = p.report.unwrap_or_default();
        let resources = report.resources.into_iter().map(|r| ResourceView {
            uri: r.uri,
            template: false,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
        });
        let templates = report.resource_templates.into_iter().map(|r| ResourceView {
            uri: r.uri_template,
            template: true,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
        });
        Self {
            reported_at: time(p.reported_at.as_ref()),
            zone: p.zone,
            name: report.name,
            disabled: p.disabled,
            commit: p.commit,
            tools: report.tools.into_iter().map(tool).collect(),
            resources: resources.chain(templates).collect(),
            prompts: report.prompts.into_iter().map(prompt).collect(),
            error: report.error.as_ref().map(|e| e.message.clone()),
            traceback: report.error.map(|e| e.traceback).filter(|t| !t.is_empty()),
        }
    }
}

/// The packages the zone reported after its last deploy, with their schemas.
#[utoipa::path(get, path = "/api/groups/{group}/zones/{zone}/packages", tag = "packages",
    params(("group" = String, Path), ("zone" = String, Path), PageQuery),
    responses((status = 200, body = Page<PackageView>), (status = 404, body = ErrorBody)))]
async fn list_packages(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<PackageView>>> {
    let request = pb::ListPackagesRequest { group, zone, page: page.to_pb()? };
    let answer = gateway.clients().zone.clone().list_packages(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer.packages.into_iter().map(PackageView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Disables a package on this zone, live.
#[utoipa::path(post, path = "/api/groups/{group}/zones/{zone}/packages/{package}/disable", tag = "packages",
    params(("group" = String, Path), ("zone" = String, Path), ("package" = String, Path)),
    responses((status = 200, body = PlacementView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn disable_package(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone, package)): Path<(String, String, String)>,
) -> ApiResult<Json<PlacementView>> {
    let request = pb::SetPackageEnabledRequest { group, zone, package };
    let placement =
        gateway.clients().zone.clone().disable_package(authed.call.request(request)).await?;
    Ok(Json(PlacementView::from(placement.into_inner())))
}

/// Enables a package on this zone again, live.
#[utoipa::path(post, path = "/api/groups/{group}/zones/{zone}/packages/{package}/enable", tag = "packages",
    params(("group" = String, Path), ("zone" = String, Path), ("package" = String, Path)),
    responses((status = 200, body = PlacementView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn enable_package(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone, package)): Path<(String, String, String)>,
) -> ApiResult<Json<PlacementView>> {
    let request = pb::SetPackageEnabledRequest { group, zone, package };
    let placement =
        gateway.clients().zone.clone().enable_package(authed.call.request(request)).await?;
    Ok(Json(PlacementView::from(placement.into_inner())))
}
