//! `/api/zones`: the zones page for everyone signed in (worker counts only for the groups the
//! caller may see), zone records for super admins.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::zone::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{Page, PageQuery, next_token};
use super::zone_views::{ZoneSummaryView, ZoneView, parse_provider, parse_size};
use super::{Route, route, visible};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::{Body, Params};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::Authenticated, routes!(list_zones)),
        route(Access::SuperAdmin, routes!(create_zone)),
        route(Access::Authenticated, routes!(get_zone)),
        route(Access::SuperAdmin, routes!(delete_zone)),
    ]
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewZoneBody {
    /// DNS label.
    pub name: String,
    /// `local`, `gcp` or `aws`.
    pub provider: String,
    /// GCP zone (`us-central1-a`) or AWS availability zone (`us-east-1a`); empty for local.
    #[serde(default)]
    pub region: String,
    /// `s`, `m`, `l`; empty or absent = every size.
    #[serde(default)]
    pub allowed_sizes: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TeardownView {
    pub group: String,
    pub zone: String,
    /// `running`, `done`, `retrying`.
    pub state: String,
    pub error: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedZoneView {
    /// One per placement being torn down.
    pub teardowns: Vec<TeardownView>,
}

/// The zones page: every zone with ready worker counts per group.
#[utoipa::path(get, path = "/api/zones", tag = "zones", params(PageQuery),
    responses((status = 200, body = Page<ZoneSummaryView>)))]
async fn list_zones(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<ZoneSummaryView>>> {
    let visible = visible::groups(&gateway, &authed).await?;
    let request = pb::ListZoneSummariesRequest {
        page: page.to_pb()?,
        groups: visible.clone().unwrap_or_default(),
    };
    let answer = gateway
        .clients()
        .zone
        .clone()
        .list_zone_summaries(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer
            .zones
            .into_iter()
            .map(|z| ZoneSummaryView::new(z, visible.as_deref()))
            .collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// Creates a zone record; nothing runs there until a group deploys to it.
#[utoipa::path(post, path = "/api/zones", tag = "zones", request_body = NewZoneBody,
    responses((status = 201, body = ZoneView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn create_zone(
    State(gateway): State<Gateway>,
    authed: Authed,
    Body(body): Body<NewZoneBody>,
) -> ApiResult<(StatusCode, Json<ZoneView>)> {
    let provider = parse_provider(&body.provider)?;
    let allowed_sizes = body
        .allowed_sizes
        .iter()
        .map(|s| parse_size("allowed_sizes", s).map(|s| s as i32))
        .collect::<ApiResult<Vec<_>>>()?;
    let request = pb::CreateZoneRequest {
        name: body.name,
        provider: provider as i32,
        region: body.region,
        allowed_sizes,
    };
    let zone = gateway
        .clients()
        .zone
        .clone()
        .create_zone(authed.call.request(request))
        .await?
        .into_inner();
    Ok((StatusCode::CREATED, Json(ZoneView::from(zone))))
}

/// One zone.
#[utoipa::path(get, path = "/api/zones/{zone}", tag = "zones", params(("zone" = String, Path)),
    responses((status = 200, body = ZoneView), (status = 404, body = ErrorBody)))]
async fn get_zone(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(zone): Path<String>,
) -> ApiResult<Json<ZoneView>> {
    let request = pb::GetZoneRequest { name: zone };
    let zone =
        gateway.clients().zone.clone().get_zone(authed.call.request(request)).await?.into_inner();
    Ok(Json(ZoneView::from(zone)))
}

/// Tears down every placement in the zone, then deletes it. Answers at once with the
/// teardowns started.
#[utoipa::path(delete, path = "/api/zones/{zone}", tag = "zones", params(("zone" = String, Path)),
    responses((status = 202, body = DeletedZoneView), (status = 404, body = ErrorBody)))]
async fn delete_zone(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(zone): Path<String>,
) -> ApiResult<(StatusCode, Json<DeletedZoneView>)> {
    let request = pb::DeleteZoneRequest { name: zone };
    let answer = gateway
        .clients()
        .zone
        .clone()
        .delete_zone(authed.call.request(request))
        .await?
        .into_inner();
    let teardowns = answer
        .teardowns
        .into_iter()
        .map(|t| TeardownView {
            state: super::zone_views::word(t.state().as_str_name(), "TEARDOWN_STATE_"),
            group: t.group,
            zone: t.zone,
            error: t.error,
        })
        .collect();
    Ok((StatusCode::ACCEPTED, Json(DeletedZoneView { teardowns })))
}
