//! `/api/groups`: the caller's groups; super admins create, change and delete them. Deleting
//! answers with the deletion's progress, which `/api/groups/{group}/deletion` keeps showing
//! (to super admins, even after the group's registration is gone).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1::Action;
use ramen_proto::deployer::v1 as pb;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::deploy_views::{DeletionView, GroupView, RestrictionsView};
use super::views::{Page, PageQuery, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Authenticated, routes!(list_groups)),
        route(Access::SuperAdmin, routes!(create_group)),
        route(Access::Member, routes!(get_group)),
        route(Access::GroupSuperAdmin(Action::ManageGroup), routes!(update_group)),
        route(Access::GroupSuperAdmin(Action::ManageGroup), routes!(delete_group)),
        route(Access::SuperAdmin, routes!(get_group_deletion)),
    ]
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroupBody {
    /// DNS label.
    pub name: String,
    /// https://, ssh (`git@host:path`), or in local mode an absolute path / file:// URL.
    pub repo_url: String,
    /// Branch, tag or commit environments default to (`main` when absent).
    #[serde(default)]
    pub default_ref: String,
    /// Container image of the group's workers; absent = the platform default.
    #[serde(default)]
    pub worker_image: String,
    /// For private repos through the GitHub App configured in the settings.
    #[serde(default)]
    pub github_app_installation_id: i64,
    #[serde(default)]
    pub restrictions: RestrictionsView,
}

/// Absent fields are left as they are.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupPatchBody {
    pub repo_url: Option<String>,
    pub default_ref: Option<String>,
    pub worker_image: Option<String>,
    /// 0 removes it.
    pub github_app_installation_id: Option<i64>,
    /// Replaces the restrictions as a whole.
    pub restrictions: Option<RestrictionsView>,
}

/// The groups the caller belongs to (every group for super admins).
#[utoipa::path(get, path = "/api/groups", tag = "groups", params(PageQuery),
    responses((status = 200, body = Page<GroupView>)))]
async fn list_groups(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<GroupView>>> {
    let request = pb::ListGroupsRequest { page: page.to_pb()? };
    let answer = gateway
        .clients()
        .deployer
        .clone()
        .list_groups(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.groups.into_iter().map(GroupView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Creates a group. Add its admins with `POST /api/groups/{group}/members`.
#[utoipa::path(post, path = "/api/groups", tag = "groups", request_body = NewGroupBody,
    responses((status = 201, body = GroupView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn create_group(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<NewGroupBody>,
) -> ApiResult<(StatusCode, Json<GroupView>)> {
    let request = pb::CreateGroupRequest {
        name: body.name,
        repo_url: body.repo_url,
        default_ref: body.default_ref,
        worker_image: body.worker_image,
        restrictions: Some(body.restrictions.into_pb()),
        github_app_installation_id: body.github_app_installation_id,
    };
    let group = gateway
        .clients()
        .deployer
        .clone()
        .create_group(authed.call.request(request))
        .await?
        .into_inner();
    Ok((StatusCode::CREATED, Json(GroupView::from(group))))
}

/// One group.
#[utoipa::path(get, path = "/api/groups/{group}", tag = "groups", params(("group" = String, Path)),
    responses((status = 200, body = GroupView), (status = 404, body = ErrorBody)))]
async fn get_group(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
) -> ApiResult<Json<GroupView>> {
    let request = pb::GetGroupRequest { name: group };
    let group = gateway.clients().deployer.clone().get_group(authed.call.request(request)).await?;
    Ok(Json(GroupView::from(group.into_inner())))
}

/// Changes the repo, default ref, worker image, App installation or restrictions.
#[utoipa::path(patch, path = "/api/groups/{group}", tag = "groups", params(("group" = String, Path)),
    request_body = GroupPatchBody,
    responses((status = 200, body = GroupView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn update_group(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Body(body): Body<GroupPatchBody>,
) -> ApiResult<Json<GroupView>> {
    let request = pb::UpdateGroupRequest {
        name: group,
        repo_url: body.repo_url,
        default_ref: body.default_ref,
        worker_image: body.worker_image,
        restrictions: body.restrictions.map(RestrictionsView::into_pb),
        github_app_installation_id: body.github_app_installation_id,
    };
    let group =
        gateway.clients().deployer.clone().update_group(authed.call.request(request)).await?;
    Ok(Json(GroupView::from(group.into_inner())))
}

/// Starts deleting the group and everything it owns, in every zone; answers with the progress.
/// Idempotent.
#[utoipa::path(delete, path = "/api/groups/{group}", tag = "groups", params(("group" = String, Path)),
    responses((status = 202, body = DeletionView), (status = 404, body = ErrorBody)))]
async fn delete_group(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
) -> ApiResult<(StatusCode, Json<DeletionView>)> {
    let request = pb::DeleteGroupRequest { name: group };
    let deletion =
        gateway.clients().deployer.clone().delete_group(authed.call.request(request)).await?;
    Ok((StatusCode::ACCEPTED, Json(DeletionView::from(deletion.into_inner()))))
}

/// Progress of a group deletion; 404 once it finished and the group is gone.
#[utoipa::path(get, path = "/api/groups/{group}/deletion", tag = "groups", params(("group" = String, Path)),
    responses((status = 200, body = DeletionView), (status = 404, body = ErrorBody)))]
async fn get_group_deletion(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
) -> ApiResult<Json<DeletionView>> {
    let request = pb::GetGroupDeletionRequest { name: group };
    let deletion =
        gateway.clients().deployer.clone().get_group_deletion(authed.call.request(request)).await?;
    Ok(Json(DeletionView::from(deletion.into_inner())))
}
