//! `/api/groups/{group}/zones/...`: a group in a zone (a placement) and the Zone actions card —
//! worker count (group admins), size (super admins), IP rules, workers, rebalance.

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::Track;
use ramen_proto::rebalancer::v1 as rpb;
use ramen_proto::zone::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::views::{Page, PageQuery, next_token};
use super::zone_views::{IpRulesView, PlacementView, WorkerView, parse_size};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

const ZONE_ACTIONS: Access = Access::GroupAdmin(Action::ZoneActions);

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Member, routes!(list_placements)),
        route(Access::Member, routes!(get_placement)),
        route(ZONE_ACTIONS, routes!(set_count)),
        route(Access::GroupSuperAdmin(Action::SetSize), routes!(set_size)),
        route(ZONE_ACTIONS, routes!(set_ip_rules)),
        route(Access::Member, routes!(list_workers)),
        route(ZONE_ACTIONS, routes!(rebalance)),
    ]
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountBody {
    /// Stable workers at least (the autoscaler keeps between count and twice it); ≥ 1.
    pub count: u32,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeBody {
    /// `s` (250m CPU, 512Mi), `m` (500m, 1Gi) or `l` (1 CPU, 2Gi), among the zone's sizes.
    pub size: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IpRulesBody {
    /// IPv4/IPv6 CIDRs or bare addresses; empty allows every source. Include the control
    /// plane's own range: deploys smoke-test as an ordinary caller.
    pub ip_rules: Vec<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WorkerQuery {
    /// `worker` or `worker_canary`; absent = both.
    #[serde(default)]
    pub track: String,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TargetWeightView {
    /// Worker id (local), target group ARN (AWS) or backend / NEG name (GCP).
    pub target: String,
    /// 0..=1000.
    pub weight_permille: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RebalanceView {
    /// False while the load balancer is still reconciling; it is retried in the background.
    pub applied: bool,
    /// Why not applied yet, or what changed.
    pub note: String,
    pub action_id: String,
    pub weights: Vec<TargetWeightView>,
}

/// The group's zones (placements).
#[utoipa::path(get, path = "/api/groups/{group}/zones", tag = "placements",
    params(("group" = String, Path), PageQuery),
    responses((status = 200, body = Page<PlacementView>), (status = 404, body = ErrorBody)))]
async fn list_placements(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<PlacementView>>> {
    let request = pb::ListPlacementsRequest { group, zone: String::new(), page: page.to_pb()? };
    let answer =
        gateway.clients().zone.clone().list_placements(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer.placements.into_iter().map(PlacementView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// The group in one zone.
#[utoipa::path(get, path = "/api/groups/{group}/zones/{zone}", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path)),
    responses((status = 200, body = PlacementView), (status = 404, body = ErrorBody)))]
async fn get_placement(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
) -> ApiResult<Json<PlacementView>> {
    let request = pb::GetPlacementRequest { group, zone };
    let placement =
        gateway.clients().zone.clone().get_placement(authed.call.request(request)).await?;
    Ok(Json(PlacementView::from(placement.into_inner())))
}

/// Sets the worker count (autoscaler minimum; maximum twice it).
#[utoipa::path(put, path = "/api/groups/{group}/zones/{zone}/count", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path)), request_body = CountBody,
    responses((status = 200, body = PlacementView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn set_count(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
    Body(body): Body<CountBody>,
) -> ApiResult<Json<PlacementView>> {
    let request = pb::SetWorkerCountRequest { group, zone, count: body.count };
    let placement =
        gateway.clients().zone.clone().set_worker_count(authed.call.request(request)).await?;
    Ok(Json(PlacementView::from(placement.into_inner())))
}

/// Sets the worker size, among the sizes the zone allows (409 otherwise).
#[utoipa::path(put, path = "/api/groups/{group}/zones/{zone}/size", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path)), request_body = SizeBody,
    responses((status = 200, body = PlacementView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn set_size(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
    Body(body): Body<SizeBody>,
) -> ApiResult<Json<PlacementView>> {
    let size = parse_size("size", &body.size)?;
    let request = pb::SetSizeRequest { group, zone, size: size as i32 };
    let placement = gateway.clients().zone.clone().set_size(authed.call.request(request)).await?;
    Ok(Json(PlacementView::from(placement.into_inner())))
}

/// Replaces the IP rules: the nodes' allow-list and the edge rule. Rolls the workers when the
/// rules changed. A bad entry is a 400 naming it.
#[utoipa::path(put, path = "/api/groups/{group}/zones/{zone}/ip-rules", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path)), request_body = IpRulesBody,
    responses((status = 200, body = IpRulesView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn set_ip_rules(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
    Body(body): Body<IpRulesBody>,
) -> ApiResult<Json<IpRulesView>> {
    let request = pb::SetIpRulesRequest { group, zone, cidrs: body.ip_rules };
    let answer = gateway.clients().zone.clone().set_ip_rules(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    let placement = answer.placement.unwrap_or_default();
    Ok(Json(IpRulesView { placement: PlacementView::from(placement), rolled: answer.rolled }))
}

/// Exact words, as the document's `enum` lists them ([`TRACKS`]).
/// The `track` filter's words; empty = both.
pub const TRACKS: [&str; 3] = ["", "worker", "worker_canary"];

fn parse_track(track: &str) -> ApiResult<Track> {
    match track {
        "" => Ok(Track::Unspecified),
        "worker" => Ok(Track::Worker),
        "worker_canary" => Ok(Track::WorkerCanary),
        _ => Err(ApiError::invalid(format!(
            "track: `{track}` is not a track (worker or worker_canary)"
        ))),
    }
}

/// The workers of the group in the zone, both tracks unless `track` says one.
#[utoipa::path(get, path = "/api/groups/{group}/zones/{zone}/workers", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path), WorkerQuery),
    responses((status = 200, body = Page<WorkerView>), (status = 404, body = ErrorBody)))]
async fn list_workers(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
    Params(query): Params<WorkerQuery>,
) -> ApiResult<Json<Page<WorkerView>>> {
    let track = parse_track(&query.track)?;
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::ListWorkersRequest { group, zone, track: track as i32, page: page.to_pb()? };
    let answer = gateway.clients().zone.clone().list_workers(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer.workers.into_iter().map(WorkerView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Rebalances the zone's load balancer from measured load. `applied: false` with a note while
/// it reconciles (retried in the background).
#[utoipa::path(post, path = "/api/groups/{group}/zones/{zone}/rebalance", tag = "placements",
    params(("group" = String, Path), ("zone" = String, Path)),
    responses((status = 200, body = RebalanceView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn rebalance(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, zone)): Path<(String, String)>,
) -> ApiResult<Json<RebalanceView>> {
    let request = rpb::RebalanceRequest { group, zone };
    let answer =
        gateway.clients().rebalancer.clone().rebalance(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(RebalanceView {
        applied: answer.applied,
        note: answer.note,
        action_id: answer.action_id,
        weights: answer
            .weights
            .into_iter()
            .map(|w| TargetWeightView { target: w.target, weight_permille: w.weight_permille })
            .collect(),
    }))
}
