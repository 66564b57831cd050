//! `GET /api/load`: the dashboard's load cells (zone × group) for the groups the caller may
//! see, with the numbers behind each cell.

use axum::Json;
use axum::extract::State;
use ramen_proto::rebalancer::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::views::{Page, PageQuery, next_token, time};
use super::zone_views::word;
use super::{Route, route, visible};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::ApiResult;
use crate::extract::Params;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::Authenticated, routes!(list_load))]
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoadQuery {
    /// Only this group.
    #[serde(default)]
    pub group: String,
    /// Only this zone.
    #[serde(default)]
    pub zone: String,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeLoadView {
    pub node_id: String,
    /// `worker` or `worker_canary`.
    pub track: String,
    pub in_flight: u32,
    pub cap: u32,
    pub ready: bool,
    pub reported_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LoadCellView {
    pub group: String,
    pub zone: String,
    /// `low` (< 30% of the in-flight cap), `even`, `high` (> 80%), `down` (no live node).
    pub state: String,
    pub live_nodes: u32,
    pub in_flight: u32,
    pub cap: u32,
    /// in_flight / cap, 0..=1.
    pub utilization: f64,
    pub last_report_at: Option<String>,
    pub nodes: Vec<NodeLoadView>,
    /// Autoscaler bounds and target for stable workers.
    pub min_workers: u32,
    pub max_workers: u32,
    pub desired_workers: u32,
}

impl From<pb::LoadCell> for LoadCellView {
    fn from(c: pb::LoadCell) -> Self {
        let state = word(c.state().as_str_name(), "LOAD_STATE_");
        let nodes = c
            .nodes
            .into_iter()
            .map(|n| NodeLoadView {
                track: word(n.track().as_str_name(), "TRACK_"),
                reported_at: time(n.reported_at.as_ref()),
                node_id: n.node_id,
                in_flight: n.in_flight,
                cap: n.cap,
                ready: n.ready,
            })
            .collect();
        Self {
            state,
            last_report_at: time(c.last_report_at.as_ref()),
            group: c.group,
            zone: c.zone,
            live_nodes: c.live_nodes,
            in_flight: c.in_flight,
            cap: c.cap,
            utilization: c.utilization,
            nodes,
            min_workers: c.min_workers,
            max_workers: c.max_workers,
            desired_workers: c.desired_workers,
        }
    }
}

/// Load cells of the groups the caller may see (every group for super admins).
#[utoipa::path(get, path = "/api/load", tag = "load", params(LoadQuery),
    responses((status = 200, body = Page<LoadCellView>)))]
async fn list_load(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(query): Params<LoadQuery>,
) -> ApiResult<Json<Page<LoadCellView>>> {
    super::views::filter_label("group", &query.group)?;
    super::views::filter_label("zone", &query.zone)?;
    let page =
        PageQuery { page_size: query.page_size, page_token: query.page_token.clone() }.to_pb()?;
    // Checked here too: a caller who sees no group is answered without asking the service.
    ramen_service::paging::Page::of(page.as_ref())
        .map_err(|e| crate::error::ApiError::invalid(format!("page_token: {e}")))?;
    let visible = visible::groups(&gateway, &authed).await?;
    let groups = match (visible.as_deref(), query.group.as_str()) {
        (None, "") => Vec::new(),
        (None, group) => vec![group.to_owned()],
        (Some(mine), "") if !mine.is_empty() => mine.to_vec(),
        (Some(mine), group) if mine.iter().any(|g| g == group) => vec![group.to_owned()],
        // No group to show (or one the caller may not see): an empty filter would mean all.
        (Some(_), _) => {
            return Ok(Json(Page { items: Vec::new(), next_page_token: String::new() }));
        }
    };
    let zones = if query.zone.is_empty() { Vec::new() } else { vec![query.zone] };
    let request = pb::ListLoadCellsRequest { groups, zones, page };
    let answer =
        gateway.clients().rebalancer.clone().list_load_cells(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer
            .cells
            .into_iter()
            .filter(|c| visible.as_ref().is_none_or(|v| v.contains(&c.group)))
            .map(LoadCellView::from)
            .collect(),
        next_page_token: next_token(answer.page),
    }))
}
