//! The audit log: all of it for super admins (`/api/audit`), a group's own for its members
//! (`/api/groups/{group}/audit`). Newest first.

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1 as pb;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::routes;

use super::views::{AuditEntryView, Page, PageQuery, next_token, parse_time};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Params;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::SuperAdmin, routes!(query_all)), route(Access::Member, routes!(query_group))]
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this group (`/api/audit` only).
    #[serde(default)]
    pub group: String,
    /// A user id or a service actor (`scheduler`).
    #[serde(default)]
    pub actor: String,
    /// RFC 3339, inclusive.
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// RFC 3339, exclusive.
    #[param(format = DateTime)]
    pub until: Option<String>,
    /// e.g. `key.` or `deploy.`.
    #[serde(default)]
    pub action_prefix: String,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
}

async fn run(
    gateway: &Gateway,
    authed: Authed,
    group: String,
    query: AuditQuery,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    let since = query.since.as_deref().map(|t| parse_time("since", t)).transpose()?;
    let until = query.until.as_deref().map(|t| parse_time("until", t)).transpose()?;
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::QueryAuditRequest {
        group,
        actor: query.actor,
        since,
        until,
        action_prefix: query.action_prefix,
        page: page.to_pb()?,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .query_audit(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.entries.into_iter().map(AuditEntryView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// The whole audit log.
#[utoipa::path(get, path = "/api/audit", tag = "audit", params(AuditQuery), responses((status = 200, body = Page<AuditEntryView>), (status = 404, body = crate::error::ErrorBody, description = "`group` names no group")))]
async fn query_all(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(query): Params<AuditQuery>,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    super::views::filter_label("group", &query.group)?;
    let group = query.group.clone();
    run(&gateway, authed, group, query).await
}

/// One group's audit log.
#[utoipa::path(get, path = "/api/groups/{group}/audit", tag = "audit", params(("group" = String, Path), AuditQuery),
    responses((status = 200, body = Page<AuditEntryView>), (status = 404, body = ErrorBody)))]
async fn query_group(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(query): Params<AuditQuery>,
) -> ApiResult<Json<Page<AuditEntryView>>> {
    // Not used here (the path names the group), but held to the rule the document states.
    super::views::filter_label("group", &query.group)?;
    run(&gateway, authed, group, query).await
}
