//! `/api/settings`: the Config page (super admins) — the GitHub App (id, and whether a private
//! key is stored: it is sealed and never returned), owned by the deployer, and the
//! auto-rebalance scheduler, owned by the rebalancer. One page, two owners: a read asks both, a
//! write sends each its own fields.

use axum::Json;
use axum::extract::State;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::rebalancer::v1 as rpb;
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

impl SettingsView {
    /// Both owners' settings; `updated_*` from whichever changed last.
    fn from_parts(app: pb::Settings, scheduler: rpb::SchedulerSettings) -> Self {
        let seconds = |t: &Option<prost_types::Timestamp>| t.as_ref().map_or(0, |t| t.seconds);
        let (updated_at, updated_by) = if seconds(&scheduler.updated_at) > seconds(&app.updated_at)
        {
            (scheduler.updated_at, scheduler.updated_by)
        } else {
            (app.updated_at, app.updated_by)
        };
        Self {
            github_app_id: Some(app.github_app_id).filter(|id| *id != 0),
            github_app_private_key_set: app.github_app_private_key_set,
            auto_rebalance_enabled: scheduler.enabled,
            auto_rebalance_interval_seconds: scheduler.interval_seconds,
            updated_at: time(updated_at.as_ref()),
            updated_by,
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
    let clients = gateway.clients();
    let (mut deployer, mut rebalancer) = (clients.deployer.clone(), clients.rebalancer.clone());
    let app = deployer.get_settings(authed.call.request(pb::GetSettingsRequest {}));
    let scheduler =
        rebalancer.get_scheduler_settings(authed.call.request(rpb::GetSchedulerSettingsRequest {}));
    let (app, scheduler) = tokio::try_join!(app, scheduler)?;
    Ok(Json(SettingsView::from_parts(app.into_inner(), scheduler.into_inner())))
}

/// Changes the Config settings.
#[utoipa::path(put, path = "/api/settings", tag = "settings", request_body = SettingsBody,
    responses((status = 200, body = SettingsView), (status = 400, body = ErrorBody)))]
async fn update_settings(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<SettingsBody>,
) -> ApiResult<Json<SettingsView>> {
    let clients = gateway.clients();
    // The scheduler's fields first: they are the ones a bad value is likely in, and a refusal
    // then leaves the App's untouched.
    let scheduler = if body.auto_rebalance_enabled.is_some()
        || body.auto_rebalance_interval_seconds.is_some()
    {
        let request = rpb::UpdateSchedulerSettingsRequest {
            enabled: body.auto_rebalance_enabled,
            interval_seconds: body.auto_rebalance_interval_seconds,
        };
        clients.rebalancer.clone().update_scheduler_settings(authed.call.request(request)).await?
    } else {
        let request = rpb::GetSchedulerSettingsRequest {};
        clients.rebalancer.clone().get_scheduler_settings(authed.call.request(request)).await?
    };
    let app = if body.github_app_id.is_some() || body.github_app_private_key.is_some() {
        let request = pb::UpdateSettingsRequest {
            github_app_id: body.github_app_id,
            github_app_private_key: body.github_app_private_key,
            ..Default::default()
        };
        clients.deployer.clone().update_settings(authed.call.request(request)).await?
    } else {
        clients
            .deployer
            .clone()
            .get_settings(authed.call.request(pb::GetSettingsRequest {}))
            .await?
    };
    Ok(Json(SettingsView::from_parts(app.into_inner(), scheduler.into_inner())))
}
