//! [`ZonePort`] over the zone-manager's `ZoneService`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ramen_clients::ZoneClient;
use ramen_proto::common::v1::{
    PageRequest, PlacementStatus, Provider as PbProvider, Track, WorkerState,
};
use ramen_proto::zone::v1 as pb;

use super::{Caller, PlacementInfo, PortError, WorkerInfo, ZoneInfo, ZonePort};
use crate::model::Provider;

const PAGE: u32 = 500;

pub struct GrpcZones {
    zones: Arc<dyn ZoneClient>,
}

impl GrpcZones {
    pub fn new(zones: Arc<dyn ZoneClient>) -> Self {
        Self { zones }
    }
}

/// The rebalancer's own reads (the catalog, the load-balancer targets).
fn own() -> Caller {
    Caller::acting_as(ramen_proto::metadata::ACTOR_REBALANCER)
}

fn provider(value: i32) -> Option<Provider> {
    match PbProvider::try_from(value).ok()? {
        PbProvider::Local => Some(Provider::Local),
        PbProvider::Gcp => Some(Provider::Gcp),
        PbProvider::Aws => Some(Provider::Aws),
        PbProvider::Unspecified => None,
    }
}

fn zone_info(zone: pb::Zone) -> Option<ZoneInfo> {
    Some(ZoneInfo { provider: provider(zone.provider)?, name: zone.name, region: zone.region })
}

fn page(token: String) -> Option<PageRequest> {
    Some(PageRequest { page_size: PAGE, page_token: token })
}

fn next(info: Option<ramen_proto::common::v1::PageInfo>) -> Option<String> {
    info.map(|p| p.next_page_token).filter(|t| !t.is_empty())
}

impl GrpcZones {
    /// Ready stable workers per (group, zone), from the zones page's counts.
    async fn stable_counts(&self) -> Result<HashMap<(String, String), u32>, PortError> {
        let (mut counts, mut token) = (HashMap::new(), String::new());
        loop {
            let list = pb::ListZoneSummariesRequest { page: page(token), groups: Vec::new() };
            let answer = self.zones.list_zone_summaries(&own(), list).await?;
            for summary in answer.zones {
                let zone = summary.zone.map(|z| z.name).unwrap_or_default();
                for group in summary.groups {
                    counts.insert((group.group, zone.clone()), group.worker);
                }
            }
            match next(answer.page) {
                Some(t) => token = t,
                None => return Ok(counts),
            }
        }
    }
}

#[async_trait]
impl ZonePort for GrpcZones {
    async fn zones(&self) -> Result<Vec<ZoneInfo>, PortError> {
        let (mut zones, mut token) = (Vec::new(), String::new());
        loop {
            let answer =
                self.zones.list_zones(&own(), pb::ListZonesRequest { page: page(token) }).await?;
            zones.extend(answer.zones.into_iter().filter_map(zone_info));
            match next(answer.page) {
                Some(t) => token = t,
                None => return Ok(zones),
            }
        }
    }

    async fn zone(&self, name: &str) -> Result<ZoneInfo, PortError> {
        let zone =
            self.zones.get_zone(&own(), pb::GetZoneRequest { name: name.to_owned() }).await?;
        zone_info(zone).ok_or_else(|| PortError::Refused(format!("zone `{name}` has no provider")))
    }

    async fn placements(&self) -> Result<Vec<PlacementInfo>, PortError> {
        let counts = self.stable_counts().await?;
        let (mut placements, mut token) = (Vec::new(), String::new());
        loop {
            let list = pb::ListPlacementsRequest { page: page(token), ..Default::default() };
            let answer = self.zones.list_placements(&own(), list).await?;
            placements.extend(answer.placements.into_iter().map(|p| {
                let active =
                    matches!(p.status(), PlacementStatus::Ready | PlacementStatus::Degraded);
                let stable_workers =
                    counts.get(&(p.group.clone(), p.zone.clone())).copied().unwrap_or_default();
                PlacementInfo {
                    group: p.group,
                    zone: p.zone,
                    worker_count: p.worker_count,
                    max_workers: p.max_workers,
                    active,
                    stable_workers,
                }
            }));
            match next(answer.page) {
                Some(t) => token = t,
                None => return Ok(placements),
            }
        }
    }

    async fn workers(&self, group: &str, zone: &str) -> Result<Vec<WorkerInfo>, PortError> {
        let (mut workers, mut token) = (Vec::new(), String::new());
        loop {
            let list = pb::ListWorkersRequest {
                group: group.to_owned(),
                zone: zone.to_owned(),
                track: Track::Unspecified as i32,
                page: page(token),
            };
            let answer = self.zones.list_workers(&own(), list).await?;
            workers.extend(answer.workers.into_iter().map(|w| WorkerInfo {
                stable: w.track() == Track::Worker,
                ready: w.state() == WorkerState::Ready,
                id: w.id,
            }));
            match next(answer.page) {
                Some(t) => token = t,
                None => return Ok(workers),
            }
        }
    }

    async fn set_edge_weights(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        weights: &[(String, u32)],
    ) -> Result<Vec<(String, u32)>, PortError> {
        let weights = weights
            .iter()
            .map(|(id, weight)| pb::WorkerWeight { worker_id: id.clone(), weight: *weight })
            .collect();
        let message =
            pb::SetEdgeWeightsRequest { group: group.to_owned(), zone: zone.to_owned(), weights };
        let answer = self.zones.set_edge_weights(caller, message).await?;
        Ok(answer.weights.into_iter().map(|w| (w.worker_id, w.weight)).collect())
    }

    async fn scale_stable(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        replicas: u32,
        timeout: Duration,
    ) -> Result<bool, PortError> {
        let message = pb::ScaleTrackRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: Track::Worker as i32,
            replicas,
            timeout: timeout.try_into().ok(),
        };
        Ok(self.zones.scale_track(caller, message).await?.ready)
    }
}
