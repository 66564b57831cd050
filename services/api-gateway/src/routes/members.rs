//! `/api/groups/{group}/members`: members read the list, group admins change it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::Action;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{MembershipView, Page, PageQuery, RoleName, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(list_members)),
        route(Access::GroupAdmin(Action::ManageMembers), routes!(add_member)),
        route(Access::GroupAdmin(Action::ManageMembers), routes!(remove_member)),
    ]
}

/// One of `user_id` or `email` names the user. Adding an existing member changes their role.
/// An email without an account answers exactly as one with (the answer never tells whether an
/// account exists): its membership takes effect when the account is created, with the
/// `user_id` answered here.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberBody {
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub email: String,
    pub role: RoleName,
}

/// The group's members.
#[utoipa::path(get, path = "/api/groups/{group}/members", tag = "members", params(("group" = String, Path), PageQuery),
    responses((status = 200, body = Page<MembershipView>), (status = 404, body = ErrorBody)))]
async fn list_members(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<MembershipView>>> {
    let request = pb::ListMembersRequest { group, page: page.to_pb()? };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .list_members(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.members.into_iter().map(MembershipView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Adds a member or changes their role; by email, whether or not the email has an account yet.
#[utoipa::path(post, path = "/api/groups/{group}/members", tag = "members", params(("group" = String, Path)), request_body = MemberBody,
    responses((status = 200, body = MembershipView), (status = 404, body = ErrorBody)))]
async fn add_member(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Body(body): Body<MemberBody>,
) -> ApiResult<Json<MembershipView>> {
    if body.user_id.is_empty() == body.email.is_empty() {
        return Err(ApiError::invalid("give exactly one of `user_id` and `email`"));
    }
    let request = pb::AddMemberRequest {
        group,
        user_id: body.user_id,
        email: body.email,
        role: body.role.to_pb() as i32,
    };
    let answer =
        gateway.clients().auth.clone().add_member(authed.call.request(request)).await?.into_inner();
    Ok(Json(MembershipView::from(answer)))
}

/// Removes a member. Idempotent.
#[utoipa::path(delete, path = "/api/groups/{group}/members/{user_id}", tag = "members", params(("group" = String, Path), ("user_id" = String, Path)),
    responses((status = 204, description = "Removed"), (status = 404, body = ErrorBody)))]
async fn remove_member(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, user_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    gateway
        .clients()
        .auth
        .clone()
        .remove_member(authed.call.request(pb::RemoveMemberRequest { group, user_id }))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
