//! `/api/groups/{group}/service-account`: the grants of the group's zone identity.

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::Action;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{RuleView, ServiceAccountView};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Body;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(get_rules)),
        route(Access::GroupAdmin(Action::ManageServiceAccount), routes!(set_rules)),
    ]
}

/// Replaces the whole rule list.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesBody {
    pub rules: Vec<RuleView>,
    /// The `version` you read; 0 or absent = overwrite whatever is there. A stale one is 409.
    #[serde(default)]
    pub expected_version: u64,
}

/// The group's service-account rules.
#[utoipa::path(get, path = "/api/groups/{group}/service-account", tag = "service-account", params(("group" = String, Path)),
    responses((status = 200, body = ServiceAccountView), (status = 404, body = ErrorBody)))]
async fn get_rules(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
) -> ApiResult<Json<ServiceAccountView>> {
    let request = pb::GetServiceAccountRulesRequest { group };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .get_service_account_rules(authed.call.request(request))
        .await?;
    Ok(Json(ServiceAccountView::from(answer.into_inner())))
}

/// Replaces the rules.
#[utoipa::path(put, path = "/api/groups/{group}/service-account", tag = "service-account", params(("group" = String, Path)), request_body = RulesBody,
    responses((status = 200, body = ServiceAccountView), (status = 409, body = ErrorBody, description = "Stale expected_version")))]
async fn set_rules(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Body(body): Body<RulesBody>,
) -> ApiResult<Json<ServiceAccountView>> {
    let rules = body
        .rules
        .into_iter()
        .map(|r| pb::ServiceAccountRule {
            provider: r.provider.to_pb() as i32,
            permissions: r.permissions,
            resources: r.resources,
            description: r.description,
        })
        .collect();
    let request =
        pb::SetServiceAccountRulesRequest { group, rules, expected_version: body.expected_version };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .set_service_account_rules(authed.call.request(request))
        .await?;
    Ok(Json(ServiceAccountView::from(answer.into_inner())))
}
