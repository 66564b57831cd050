//! Tracks and workers.

use ramen_proto::zone::v1 as pb;
use tonic::{Request, Response, Status};

use super::conversions::{self as conv, duration, track_filter, track_from_proto};
use super::{ZoneApi, caller};
use crate::error::Result;
use crate::manager::RolloutOutcome;

fn rollout(group: &str, zone: &str, outcome: &RolloutOutcome) -> pb::TrackRolloutResponse {
    pb::TrackRolloutResponse {
        ready: outcome.ready,
        workers: outcome.workers.iter().map(|w| conv::worker(group, zone, w)).collect(),
        not_ready: outcome.not_ready.iter().map(conv::not_ready).collect(),
    }
}

impl ZoneApi {
    pub(super) async fn do_restart_track(
        &self,
        request: Request<pb::RestartTrackRequest>,
    ) -> Result<Response<pb::TrackRolloutResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let track = track_from_proto(r.track)?;
            let timeout = duration(r.timeout)?;
            self.manager.restart_track(&r.group, &r.zone, track, timeout).await
        }
        .await;
        let target = format!("track/{}/{}", r.zone, r.track().as_str_name());
        let outcome =
            self.audited(&caller, "placement.restart_track", &r.group, target, result).await?;
        Ok(Response::new(rollout(&r.group, &r.zone, &outcome)))
    }

    pub(super) async fn do_scale_track(
        &self,
        request: Request<pb::ScaleTrackRequest>,
    ) -> Result<Response<pb::TrackRolloutResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let track = track_from_proto(r.track)?;
            let timeout = duration(r.timeout)?;
            self.manager.scale_track(&r.group, &r.zone, track, r.replicas, timeout).await
        }
        .await;
        let target = format!("track/{}/{}", r.zone, r.track().as_str_name());
        let outcome =
            self.audited(&caller, "placement.scale_track", &r.group, target, result).await?;
        Ok(Response::new(rollout(&r.group, &r.zone, &outcome)))
    }

    pub(super) async fn do_list_workers(
        &self,
        request: Request<pb::ListWorkersRequest>,
    ) -> Result<Response<pb::ListWorkersResponse>, Status> {
        let r = request.into_inner();
        let page = crate::store::page(r.page.as_ref())?;
        let track = track_filter(r.track)?;
        let workers = self.manager.list_workers(&r.group, &r.zone, track).await?;
        let (workers, page) = page.slice(workers);
        let workers = workers.iter().map(|w| conv::worker(&r.group, &r.zone, w)).collect();
        Ok(Response::new(pb::ListWorkersResponse { workers, page: Some(page) }))
    }

    pub(super) async fn do_build_environment(
        &self,
        request: Request<pb::BuildEnvironmentRequest>,
    ) -> Result<Response<pb::BuildEnvironmentResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = async {
            let snapshot = conv::snapshot_ref(r.snapshot, "snapshot")?;
            let timeout = duration(r.timeout)?;
            self.manager.build_environment(&r.group, &r.zone, &snapshot, timeout).await
        }
        .await;
        let target = format!("zone/{}", r.zone);
        let outcome =
            self.audited(&caller, "placement.build_environment", &r.group, target, result).await?;
        Ok(Response::new(pb::BuildEnvironmentResponse {
            environment: outcome.environment.map(|e| ramen_proto::common::v1::PythonEnvironment {
                key: e.key,
                location: e.location,
                digest: format!("sha256:{}", e.digest),
            }),
            built: outcome.built,
            log: outcome.log,
            error: outcome.error.unwrap_or_default(),
        }))
    }
}
