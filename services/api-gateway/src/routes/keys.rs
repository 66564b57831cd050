//! `/api/groups/{group}/keys`: MCP keys. The plaintext is in the create answer only.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::Action;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::views::{KeyView, Page, PageQuery, next_token, parse_time};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(list_keys)),
        route(Access::GroupAdmin(Action::ManageKeys), routes!(create_key)),
        route(Access::GroupAdmin(Action::ManageKeys), routes!(revoke_key)),
    ]
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KeyQuery {
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
    /// Also list revoked keys.
    #[serde(default)]
    pub include_revoked: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKeyBody {
    pub name: String,
    /// Environments the key works on; empty or absent = all.
    #[serde(default)]
    pub environments: Vec<String>,
    /// Zones the key works on; empty or absent = all.
    #[serde(default)]
    pub zones: Vec<String>,
    /// RFC 3339; absent = never expires.
    pub expires_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedKeyView {
    pub key: Option<KeyView>,
    /// The key itself: shown this once, never again. Send it as `Authorization: Bearer`.
    pub plaintext: String,
}

/// The group's keys (prefixes only).
#[utoipa::path(get, path = "/api/groups/{group}/keys", tag = "keys", params(("group" = String, Path), KeyQuery),
    responses((status = 200, body = Page<KeyView>), (status = 404, body = ErrorBody)))]
async fn list_keys(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(query): Params<KeyQuery>,
) -> ApiResult<Json<Page<KeyView>>> {
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::ListMcpKeysRequest {
        group,
        page: page.to_pb()?,
        include_revoked: query.include_revoked,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .list_mcp_keys(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.keys.into_iter().map(KeyView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Creates a key and returns its plaintext once.
#[utoipa::path(post, path = "/api/groups/{group}/keys", tag = "keys", params(("group" = String, Path)), request_body = NewKeyBody,
    responses((status = 201, body = CreatedKeyView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn create_key(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Body(body): Body<NewKeyBody>,
) -> ApiResult<(StatusCode, Json<CreatedKeyView>)> {
    let expires_at =
        body.expires_at.as_deref().map(|at| parse_time("expires_at", at)).transpose()?;
    let request = pb::CreateMcpKeyRequest {
        group,
        name: body.name,
        environments: body.environments,
        zones: body.zones,
        expires_at,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .create_mcp_key(authed.call.request(request))
        .await?
        .into_inner();
    Ok((
        StatusCode::CREATED,
        Json(CreatedKeyView { key: answer.key.map(KeyView::from), plaintext: answer.plaintext }),
    ))
}

/// Revokes a key; running nodes drop it without a redeploy. Idempotent.
#[utoipa::path(delete, path = "/api/groups/{group}/keys/{key_id}", tag = "keys", params(("group" = String, Path), ("key_id" = String, Path)),
    responses((status = 200, body = KeyView), (status = 404, body = ErrorBody)))]
async fn revoke_key(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, key_id)): Path<(String, String)>,
) -> ApiResult<Json<KeyView>> {
    let answer = gateway
        .clients()
        .auth
        .clone()
        .revoke_mcp_key(authed.call.request(pb::RevokeMcpKeyRequest { group, key_id }))
        .await?;
    Ok(Json(KeyView::from(answer.into_inner())))
}
