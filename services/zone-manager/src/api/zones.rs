//! Zones and the zones page.

use ramen_proto::zone::v1 as pb;
use tonic::{Request, Response, Status};

use super::conversions::{self as conv, provider_from_proto, size_from_proto};
use super::{ZoneApi, caller, zone_target};
use crate::error::Result;
use crate::teardown::TeardownRecord;

impl ZoneApi {
    pub(super) async fn do_create_zone(
        &self,
        request: Request<pb::CreateZoneRequest>,
    ) -> Result<Response<pb::Zone>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let provider = provider_from_proto(r.provider)?;
            let sizes = r
                .allowed_sizes
                .iter()
                .map(|s| size_from_proto("allowed_sizes", *s))
                .collect::<Result<Vec<_>>>()?;
            self.manager.create_zone(r.name.clone(), provider, r.region.clone(), sizes).await
        }
        .await;
        let zone = self.audited(&caller, "zone.create", "", zone_target(&r.name), result).await?;
        Ok(Response::new(conv::zone(&zone)))
    }

    pub(super) async fn do_get_zone(
        &self,
        request: Request<pb::GetZoneRequest>,
    ) -> Result<Response<pb::Zone>, Status> {
        let zone = self.manager.get_zone(&request.into_inner().name).await?;
        Ok(Response::new(conv::zone(&zone)))
    }

    pub(super) async fn do_list_zones(
        &self,
        request: Request<pb::ListZonesRequest>,
    ) -> Result<Response<pb::ListZonesResponse>, Status> {
        let page = crate::store::page(request.get_ref().page.as_ref())?;
        let (zones, page) = self.manager.list_zones(page).await?;
        Ok(Response::new(pb::ListZonesResponse {
            zones: zones.iter().map(conv::zone).collect(),
            page: Some(page),
        }))
    }

    pub(super) async fn do_delete_zone(
        &self,
        request: Request<pb::DeleteZoneRequest>,
    ) -> Result<Response<pb::DeleteZoneResponse>, Status> {
        let caller = caller(&request);
        let name = request.into_inner().name;
        let result = self.manager.delete_zone(&caller, &name).await;
        let teardowns =
            self.audited(&caller, "zone.delete", "", zone_target(&name), result).await?;
        Ok(Response::new(pb::DeleteZoneResponse {
            teardowns: teardowns.iter().map(teardown).collect(),
        }))
    }

    pub(super) async fn do_list_zone_summaries(
        &self,
        request: Request<pb::ListZoneSummariesRequest>,
    ) -> Result<Response<pb::ListZoneSummariesResponse>, Status> {
        let r = request.into_inner();
        let page = crate::store::page(r.page.as_ref())?;
        let (summaries, page) = self.manager.zone_summaries(page, &r.groups).await?;
        let zones = summaries
            .iter()
            .map(|s| pb::ZoneSummary {
                zone: Some(conv::zone(&s.zone)),
                groups: s
                    .groups
                    .iter()
                    .map(|g| pb::GroupWorkerCount {
                        group: g.group.clone(),
                        worker: g.worker,
                        worker_canary: g.canary,
                        not_ready: g.not_ready,
                        desired: g.desired,
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::ListZoneSummariesResponse { zones, page: Some(page) }))
    }
}

pub(super) fn teardown(record: &TeardownRecord) -> pb::TeardownProgress {
    use crate::teardown::{StepPhase, TeardownPhase};
    use ramen_proto::common::v1::StepStatus;
    let state = match record.state {
        TeardownPhase::Running => pb::TeardownState::Running,
        TeardownPhase::Done => pb::TeardownState::Done,
        TeardownPhase::Retrying => pb::TeardownState::Retrying,
    };
    let steps = record
        .steps
        .iter()
        .map(|s| pb::TeardownStep {
            name: s.name.clone(),
            status: match s.status {
                StepPhase::Pending => StepStatus::Pending,
                StepPhase::Running => StepStatus::Running,
                StepPhase::Succeeded => StepStatus::Succeeded,
                StepPhase::Failed => StepStatus::Failed,
            } as i32,
            detail: s.detail.clone(),
            updated_at: conv::timestamp(s.updated_at_ms),
        })
        .collect();
    pb::TeardownProgress {
        group: record.group.clone(),
        zone: record.zone.clone(),
        state: state as i32,
        steps,
        started_at: conv::timestamp(record.started_at_ms),
        finished_at: conv::timestamp(record.finished_at_ms),
        error: record.error.clone(),
    }
}
