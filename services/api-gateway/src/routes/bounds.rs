//! `/api/service-account-bounds`: what group admins may grant their workers, per provider
//! (`ramen_grant_bounds`). Anyone signed in reads them (a group admin writes rules to pass
//! them); super admins set them.

use axum::Json;
use axum::extract::State;
use ramen_proto::auth::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::time;
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Body;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Authenticated, routes!(get_bounds)),
        route(Access::SuperAdmin, routes!(set_bounds)),
    ]
}

/// One provider's bounds. Patterns use `*` for any run of characters.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderBoundsView {
    /// Patterns every permission of a rule (AWS action, GCP role) must fall under.
    pub permissions: Vec<String>,
    /// Patterns no permission may touch, even one `permissions` covers.
    pub denied: Vec<String>,
    /// Patterns every resource of a rule must fall under.
    pub resources: Vec<String>,
    /// Whether a permission may hold `*`.
    pub wildcards: bool,
    /// Whether a rule may name no resource (AWS: every resource; GCP: the whole project).
    pub unscoped: bool,
}

impl From<pb::ProviderBounds> for ProviderBoundsView {
    fn from(b: pb::ProviderBounds) -> Self {
        Self {
            permissions: b.permissions,
            denied: b.denied,
            resources: b.resources,
            wildcards: b.wildcards,
            unscoped: b.unscoped,
        }
    }
}

impl From<ProviderBoundsView> for pb::ProviderBounds {
    fn from(b: ProviderBoundsView) -> Self {
        Self {
            permissions: b.permissions,
            denied: b.denied,
            resources: b.resources,
            wildcards: b.wildcards,
            unscoped: b.unscoped,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BoundsView {
    pub aws: ProviderBoundsView,
    pub gcp: ProviderBoundsView,
    /// 0 = never set: the defaults. Send it back as `expected_version`.
    pub version: u64,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

impl From<pb::ServiceAccountBounds> for BoundsView {
    fn from(b: pb::ServiceAccountBounds) -> Self {
        Self {
            aws: b.aws.unwrap_or_default().into(),
            gcp: b.gcp.unwrap_or_default().into(),
            version: b.version,
            updated_at: time(b.updated_at.as_ref()),
            updated_by: b.updated_by,
        }
    }
}

/// Replaces both providers' bounds.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BoundsBody {
    pub aws: ProviderBoundsView,
    pub gcp: ProviderBoundsView,
    /// The `version` you read; 0 or absent = overwrite. A stale one is 409.
    #[serde(default)]
    pub expected_version: u64,
}

/// The bounds on service-account rules.
#[utoipa::path(get, path = "/api/service-account-bounds", tag = "service-account",
    responses((status = 200, body = BoundsView), (status = 401, body = ErrorBody)))]
async fn get_bounds(State(gateway): State<Gateway>, authed: Authed) -> ApiResult<Json<BoundsView>> {
    let request = pb::GetServiceAccountBoundsRequest {};
    let answer = gateway
        .clients()
        .auth
        .clone()
        .get_service_account_bounds(authed.call.request(request))
        .await?;
    Ok(Json(BoundsView::from(answer.into_inner())))
}

/// Sets the bounds; stored rules are kept, and zones apply only the rules inside.
#[utoipa::path(put, path = "/api/service-account-bounds", tag = "service-account", request_body = BoundsBody,
    responses((status = 200, body = BoundsView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Stale expected_version")))]
async fn set_bounds(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<BoundsBody>,
) -> ApiResult<Json<BoundsView>> {
    let request = pb::SetServiceAccountBoundsRequest {
        aws: Some(body.aws.into()),
        gcp: Some(body.gcp.into()),
        expected_version: body.expected_version,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .set_service_account_bounds(authed.call.request(request))
        .await?;
    Ok(Json(BoundsView::from(answer.into_inner())))
}
