//! Environments: `/api/environments` lists every environment across the caller's groups with
//! the last deploy in the row; `/api/groups/{group}/environments` is one group's, where group
//! admins create, change and delete them.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::StringList;
use ramen_proto::deployer::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::deploy_views::EnvironmentView;
use super::views::{Page, PageQuery, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

const MANAGE: Access = Access::GroupAdmin(Action::ManageEnvironments);

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Authenticated, routes!(list_all_environments)),
        route(Access::Member, routes!(list_environments)),
        route(MANAGE, routes!(create_environment)),
        route(Access::Member, routes!(get_environment)),
        route(MANAGE, routes!(update_environment)),
        route(MANAGE, routes!(delete_environment)),
    ]
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEnvironmentBody {
    /// DNS label.
    pub name: String,
    /// Absent = the group's default ref.
    pub git_ref: Option<String>,
    /// Zones it deploys to (any zone that exists).
    pub zones: Vec<String>,
    #[serde(default)]
    pub verbose: bool,
    /// Packages (`pkg`) or tools (`pkg.tool`) hidden on every zone.
    #[serde(default)]
    pub blocked: Vec<String>,
    /// How its MCP clients authenticate; absent = the platform default, no rules.
    pub auth: Option<super::environment_auth::McpAuthBody>,
    /// Whether a deploy that changes the tool surface waits for a group admin's review;
    /// absent = `review` for an environment named `prod`, `allow` otherwise.
    pub surface_changes: Option<SurfaceChangesWord>,
    /// Whether call records keep each call's arguments (secrets redacted); off by default.
    #[serde(default)]
    pub record_arguments: bool,
}

/// What a deploy does when the canary's surface (tools, resources, templates, prompts, as a
/// model reads them) differs from stable's: `allow` logs the difference and goes on, `review`
/// waits in the job's review step until a group admin approves or rejects.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceChangesWord {
    Allow,
    Review,
}

impl SurfaceChangesWord {
    fn wire(self) -> i32 {
        match self {
            Self::Allow => pb::SurfaceChanges::Allow as i32,
            Self::Review => pb::SurfaceChanges::Review as i32,
        }
    }
}

/// Absent fields are left as they are. `blocked` reaches the running nodes at once; the rest
/// applies at the next deploy (a zone no environment of the group uses any more is torn down).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentPatchBody {
    pub git_ref: Option<String>,
    pub zones: Option<Vec<String>>,
    pub verbose: Option<bool>,
    pub blocked: Option<Vec<String>>,
    pub surface_changes: Option<SurfaceChangesWord>,
    /// Whether call records keep each call's arguments; applies at the next deploy.
    pub record_arguments: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedEnvironmentView {
    /// Zones whose placement for the group is being torn down (no other environment uses them).
    pub released_zones: Vec<String>,
}

async fn list(
    gateway: &Gateway,
    authed: &Authed,
    group: String,
    page: PageQuery,
) -> ApiResult<Json<Page<EnvironmentView>>> {
    let request = pb::ListEnvironmentsRequest { group, page: page.to_pb()? };
    let answer = gateway
        .clients()
        .deployer
        .clone()
        .list_environments(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.environments.into_iter().map(EnvironmentView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Every environment of every group the caller belongs to, with the last deploy.
#[utoipa::path(get, path = "/api/environments", tag = "environments", params(PageQuery),
    responses((status = 200, body = Page<EnvironmentView>)))]
async fn list_all_environments(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<EnvironmentView>>> {
    list(&gateway, &authed, String::new(), page).await
}

/// The group's environments.
#[utoipa::path(get, path = "/api/groups/{group}/environments", tag = "environments",
    params(("group" = String, Path), PageQuery),
    responses((status = 200, body = Page<EnvironmentView>), (status = 404, body = ErrorBody)))]
async fn list_environments(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<EnvironmentView>>> {
    list(&gateway, &authed, group, page).await
}

/// Creates an environment: the group at a ref on a set of zones.
#[utoipa::path(post, path = "/api/groups/{group}/environments", tag = "environments",
    params(("group" = String, Path)), request_body = NewEnvironmentBody,
    responses((status = 201, body = EnvironmentView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn create_environment(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Body(body): Body<NewEnvironmentBody>,
) -> ApiResult<(StatusCode, Json<EnvironmentView>)> {
    let request = pb::CreateEnvironmentRequest {
        group,
        name: body.name,
        git_ref: body.git_ref.unwrap_or_default(),
        zones: body.zones,
        verbose: body.verbose,
        blocked: body.blocked,
        auth: body.auth.map(super::environment_auth::McpAuthBody::wire),
        surface_changes: body.surface_changes.map_or(0, SurfaceChangesWord::wire),
        record_arguments: body.record_arguments,
    };
    let env =
        gateway.clients().deployer.clone().create_environment(authed.call.request(request)).await?;
    Ok((StatusCode::CREATED, Json(EnvironmentView::from(env.into_inner()))))
}

/// One environment with its last deploy.
#[utoipa::path(get, path = "/api/groups/{group}/environments/{env}", tag = "environments",
    params(("group" = String, Path), ("env" = String, Path)),
    responses((status = 200, body = EnvironmentView), (status = 404, body = ErrorBody)))]
async fn get_environment(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
) -> ApiResult<Json<EnvironmentView>> {
    let request = pb::GetEnvironmentRequest { group, name };
    let env =
        gateway.clients().deployer.clone().get_environment(authed.call.request(request)).await?;
    Ok(Json(EnvironmentView::from(env.into_inner())))
}

/// Changes the ref, zones, verbose flag, blocked list, surface review setting or whether call
/// records keep arguments.
#[utoipa::path(patch, path = "/api/groups/{group}/environments/{env}", tag = "environments",
    params(("group" = String, Path), ("env" = String, Path)), request_body = EnvironmentPatchBody,
    responses((status = 200, body = EnvironmentView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn update_environment(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
    Body(body): Body<EnvironmentPatchBody>,
) -> ApiResult<Json<EnvironmentView>> {
    let request = pb::UpdateEnvironmentRequest {
        group,
        name,
        git_ref: body.git_ref,
        verbose: body.verbose,
        zones: body.zones.map(|values| StringList { values }),
        blocked: body.blocked.map(|values| StringList { values }),
        auth: None,
        surface_changes: body.surface_changes.map_or(0, SurfaceChangesWord::wire),
        record_arguments: body.record_arguments,
    };
    let env =
        gateway.clients().deployer.clone().update_environment(authed.call.request(request)).await?;
    Ok(Json(EnvironmentView::from(env.into_inner())))
}

/// Deletes the environment and tears down the zones no other environment of the group uses.
/// Refused (409) while a deploy of it runs.
#[utoipa::path(delete, path = "/api/groups/{group}/environments/{env}", tag = "environments",
    params(("group" = String, Path), ("env" = String, Path)),
    responses((status = 200, body = DeletedEnvironmentView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn delete_environment(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
) -> ApiResult<Json<DeletedEnvironmentView>> {
    let request = pb::DeleteEnvironmentRequest { group, name };
    let answer = gateway
        .clients()
        .deployer
        .clone()
        .delete_environment(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(DeletedEnvironmentView { released_zones: answer.released_zones }))
}
