//! `/api/settings`: the Config page (super admins) — the GitHub App (id, and whether a private
//! key is stored: it is sealed and never returned) and the auto-rebalance scheduler.

use axum::Json;
use axum::extract::State;
use ramen_proto::deployer::v1 as pb;
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
        route(Access::SuperAdmin, routes!(get_settings)),
        route(Access::SuperAdmin, routes!(update_settings)),
    ]
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsView {
    /// GitHub App id; absent = no App configured.
    pub github_app_id: Option<i64>,
    /// Whether the App's private key is stored (it is never returned).
    pub github_app_private_key_set: bool,
    pub auto_rebalance_enabled: bool,
    /// Scheduler period in seconds.
    pub auto_rebalance_interval_seconds: u32,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

impl From<pb::Settings> for SettingsView {
    fn from(s: pb::Settings) -> Self {
        Self {
            github_app_id: Some(s.github_app_id).filter(|id| *id != 0),
            github_app_private_key_set: s.github_app_private_key_set,
            auto_rebalance_enabled: s.auto_rebalance_enabled,
            auto_rebalance_interval_seconds: s.auto_rebalance_interval_seconds,
            updated_at: time(s.updated_at.as_ref()),
            updated_by: s.updated_by,
        }
    }
}

/// Absent fields are left as they are. No `Debug`: the private key must not reach a log.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    /// 0 removes the App.
    pub github_app_id: Option<i64>,
    /// PEM private key of the App (write-only); an empty string removes it.
    pub github_app_private_key: Option<String>,
    pub auto_rebalance_enabled: Option<bool>,
    /// At least 10.
    pub auto_rebalance_interval_seconds: Option<u32>,
}

/// The Config settings.
#[utoipa::path(get, path = "/api/settings", tag = "settings", responses((status = 200, body = SettingsView)))]
async fn get_settings(
    State(gateway): State<Gateway>,
    authed: Authed,
) -> ApiResult<Json<SettingsView>> {
    let request = pb::GetSettingsRequest {};
    let settings =
        gateway.clients().deployer.clone().get_settings(authed.call.request(request)).await?;
    Ok(Json(SettingsView::from(settings.into_inner())))
}

/// Changes the Config settings.
#[utoipa::path(put, path = "/api/settings", tag = "settings", request_body = SettingsBody,
    responses((status = 200, body = SettingsView), (status = 400, body = ErrorBody)))]
async fn update_settings(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<SettingsBody>,
) -> ApiResult<Json<SettingsView>> {
    let request = pb::UpdateSettingsRequest {
        github_app_id: body.github_app_id,
        github_app_private_key: body.github_app_private_key,
        auto_rebalance_enabled: body.auto_rebalance_enabled,
        auto_rebalance_interval_seconds: body.auto_rebalance_interval_seconds,
    };
    let settings =
        gateway.clients().deployer.clone().update_settings(authed.call.request(request)).await?;
    Ok(Json(SettingsView::from(settings.into_inner())))
}
