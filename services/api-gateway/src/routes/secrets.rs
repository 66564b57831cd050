//! `/api/groups/{group}/secrets`: write-only values. Lists show names, scopes and times.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::Action;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::views::{Page, PageQuery, SecretView, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(list_secrets)),
        route(Access::GroupAdmin(Action::ManageSecrets), routes!(set_secret)),
        route(Access::GroupAdmin(Action::ManageSecrets), routes!(delete_secret)),
    ]
}

/// No `Debug`: the value must not reach a log through a stray `{:?}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretBody {
    /// Write-only: never returned by any route.
    pub value: String,
    /// Empty or absent = every environment.
    #[serde(default)]
    pub environment: String,
    /// Empty or absent = every zone.
    #[serde(default)]
    pub zone: String,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScopeQuery {
    #[serde(default)]
    pub environment: String,
    #[serde(default)]
    pub zone: String,
}

/// The group's secrets (metadata only).
#[utoipa::path(get, path = "/api/groups/{group}/secrets", tag = "secrets", params(("group" = String, Path), PageQuery),
    responses((status = 200, body = Page<SecretView>), (status = 404, body = ErrorBody)))]
async fn list_secrets(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<SecretView>>> {
    let request = pb::ListSecretsRequest { group, page: page.to_pb()? };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .list_secrets(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.secrets.into_iter().map(SecretView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Sets a secret for a scope (upsert by name and scope).
#[utoipa::path(put, path = "/api/groups/{group}/secrets/{name}", tag = "secrets", params(("group" = String, Path), ("name" = String, Path)),
    request_body = SecretBody, responses((status = 200, body = SecretView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn set_secret(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
    Body(body): Body<SecretBody>,
) -> ApiResult<Json<SecretView>> {
    let scope = Some(pb::SecretScope { environment: body.environment, zone: body.zone });
    let request = pb::SetSecretRequest { group, name, scope, value: body.value };
    let answer =
        gateway.clients().auth.clone().set_secret(authed.call.request(request)).await?.into_inner();
    Ok(Json(SecretView::from(answer)))
}

/// Deletes the secret of one scope (`?environment=&zone=`). Idempotent.
#[utoipa::path(delete, path = "/api/groups/{group}/secrets/{name}", tag = "secrets", params(("group" = String, Path), ("name" = String, Path), ScopeQuery),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorBody)))]
async fn delete_secret(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
    Params(scope): Params<ScopeQuery>,
) -> ApiResult<StatusCode> {
    super::views::filter_label("environment", &scope.environment)?;
    super::views::filter_label("zone", &scope.zone)?;
    let scope = Some(pb::SecretScope { environment: scope.environment, zone: scope.zone });
    gateway
        .clients()
        .auth
        .clone()
        .delete_secret(authed.call.request(pb::DeleteSecretRequest { group, name, scope }))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
