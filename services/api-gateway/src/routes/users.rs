//! `/api/users/*`: super admins manage users.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::auth::MeView;
use super::views::{MembershipView, Page, PageQuery, UserView, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::SuperAdmin, routes!(list_users)),
        route(Access::SuperAdmin, routes!(create_user)),
        route(Access::SuperAdmin, routes!(get_user)),
        route(Access::SuperAdmin, routes!(delete_user)),
        route(Access::SuperAdmin, routes!(set_super_admin)),
    ]
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
    /// Case-insensitive email prefix.
    pub email_prefix: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUserBody {
    pub email: String,
    /// Omit to generate a one-time password (returned once; must be changed at first login).
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub super_admin: bool,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedUserView {
    pub user: Option<UserView>,
    /// Only when no password was given; shown this once.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub one_time_password: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SuperAdminBody {
    pub super_admin: bool,
}

/// Lists users by email.
#[utoipa::path(get, path = "/api/users", tag = "users", params(UserQuery), responses((status = 200, body = Page<UserView>)))]
async fn list_users(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(query): Params<UserQuery>,
) -> ApiResult<Json<Page<UserView>>> {
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::ListUsersRequest {
        page: page.to_pb()?,
        email_prefix: query.email_prefix.unwrap_or_default(),
    };
    let answer =
        gateway.clients().auth.clone().list_users(authed.call.request(request)).await?.into_inner();
    Ok(Json(Page {
        items: answer.users.into_iter().map(UserView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Creates a user.
#[utoipa::path(post, path = "/api/users", tag = "users", request_body = NewUserBody,
    responses((status = 201, body = CreatedUserView), (status = 409, body = ErrorBody)))]
async fn create_user(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<NewUserBody>,
) -> ApiResult<(StatusCode, Json<CreatedUserView>)> {
    let request = pb::CreateUserRequest {
        email: body.email,
        password: body.password,
        super_admin: body.super_admin,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .create_user(authed.call.request(request))
        .await?
        .into_inner();
    let view = CreatedUserView {
        user: answer.user.map(UserView::from),
        one_time_password: answer.one_time_password,
    };
    Ok((StatusCode::CREATED, Json(view)))
}

/// A user and their memberships.
#[utoipa::path(get, path = "/api/users/{user_id}", tag = "users", params(("user_id" = String, Path)),
    responses((status = 200, body = MeView), (status = 404, body = ErrorBody)))]
async fn get_user(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(user_id): Path<String>,
) -> ApiResult<Json<MeView>> {
    let answer = gateway
        .clients()
        .auth
        .clone()
        .get_user(authed.call.request(pb::GetUserRequest { user_id }))
        .await?
        .into_inner();
    Ok(Json(MeView {
        user: answer.user.map(UserView::from),
        memberships: answer.memberships.into_iter().map(MembershipView::from).collect(),
    }))
}

/// Deletes a user, their memberships and sessions. Idempotent.
#[utoipa::path(delete, path = "/api/users/{user_id}", tag = "users", params(("user_id" = String, Path)),
    responses((status = 204, description = "Deleted"), (status = 409, body = ErrorBody, description = "The last super admin")))]
async fn delete_user(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(user_id): Path<String>,
) -> ApiResult<StatusCode> {
    gateway
        .clients()
        .auth
        .clone()
        .delete_user(authed.call.request(pb::DeleteUserRequest { user_id }))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Grants or removes super admin.
#[utoipa::path(put, path = "/api/users/{user_id}/super-admin", tag = "users", params(("user_id" = String, Path)), request_body = SuperAdminBody,
    responses((status = 200, body = UserView), (status = 409, body = ErrorBody, description = "The last super admin")))]
async fn set_super_admin(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(user_id): Path<String>,
    Body(body): Body<SuperAdminBody>,
) -> ApiResult<Json<UserView>> {
    let request = pb::SetSuperAdminRequest { user_id, super_admin: body.super_admin };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .set_super_admin(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(UserView::from(answer)))
}
