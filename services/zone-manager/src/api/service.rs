//! The generated `ZoneService` trait: each method applies the one rule to its caller (the
//! table below is the zone-manager's access policy), then hands over to its handler.
//! Services acting on their own (the deployer's pipeline, the rebalancer's scheduler, the
//! edge's lookups) pass every check; users pass as their grants allow — the same rule the
//! api-gateway applied to the route that led here.

use ramen_access::{Caller, rule::Action};
use ramen_proto::zone::v1 as pb;
use ramen_proto::zone::v1::zone_service_server::ZoneService;
use tonic::{Request, Response, Status};

use super::ZoneApi;

type Answer<T> = Result<Response<T>, Status>;

fn allow<T>(request: &Request<T>, group: &str, action: Action) -> Result<(), Status> {
    Caller::from_request(request).require(group, action).map_err(Status::from)
}

/// Reads open to every signed-in user (zones and their counts, filtered by what they see).
fn signed_in<T>(request: &Request<T>) -> Result<(), Status> {
    match Caller::from_request(request).actor.is_empty() {
        true => Err(Status::unauthenticated("sign in first: the call names no caller")),
        false => Ok(()),
    }
}

#[tonic::async_trait]
impl ZoneService for ZoneApi {
    async fn create_zone(&self, request: Request<pb::CreateZoneRequest>) -> Answer<pb::Zone> {
        allow(&request, "", Action::ManageZones)?;
        self.do_create_zone(request).await
    }
    async fn get_zone(&self, request: Request<pb::GetZoneRequest>) -> Answer<pb::Zone> {
        signed_in(&request)?;
        self.do_get_zone(request).await
    }
    async fn list_zones(
        &self,
        request: Request<pb::ListZonesRequest>,
    ) -> Answer<pb::ListZonesResponse> {
        signed_in(&request)?;
        self.do_list_zones(request).await
    }
    async fn delete_zone(
        &self,
        request: Request<pb::DeleteZoneRequest>,
    ) -> Answer<pb::DeleteZoneResponse> {
        allow(&request, "", Action::ManageZones)?;
        self.do_delete_zone(request).await
    }
    async fn list_zone_summaries(
        &self,
        request: Request<pb::ListZoneSummariesRequest>,
    ) -> Answer<pb::ListZoneSummariesResponse> {
        signed_in(&request)?;
        self.do_list_zone_summaries(request).await
    }
    async fn ensure_placement(
        &self,
        request: Request<pb::EnsurePlacementRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_ensure_placement(request).await
    }
    async fn get_placement(
        &self,
        request: Request<pb::GetPlacementRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ReadGroup)?;
        self.do_get_placement(request).await
    }
    async fn list_placements(
        &self,
        request: Request<pb::ListPlacementsRequest>,
    ) -> Answer<pb::ListPlacementsResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, if group.is_empty() { Action::Admin } else { Action::ReadGroup })?;
        self.do_list_placements(request).await
    }
    async fn set_worker_count(
        &self,
        request: Request<pb::SetWorkerCountRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ZoneActions)?;
        self.do_set_worker_count(request).await
    }
    async fn set_size(&self, request: Request<pb::SetSizeRequest>) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::SetSize)?;
        self.do_set_size(request).await
    }
    async fn set_ip_rules(
        &self,
        request: Request<pb::SetIpRulesRequest>,
    ) -> Answer<pb::SetIpRulesResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ZoneActions)?;
        self.do_set_ip_rules(request).await
    }
    async fn disable_package(
        &self,
        request: Request<pb::SetPackageEnabledRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ZoneActions)?;
        self.do_set_package(request, false).await
    }
    async fn enable_package(
        &self,
        request: Request<pb::SetPackageEnabledRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ZoneActions)?;
        self.do_set_package(request, true).await
    }
    async fn build_environment(
        &self,
        request: Request<pb::BuildEnvironmentRequest>,
    ) -> Answer<pb::BuildEnvironmentResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_build_environment(request).await
    }
    async fn write_config(
        &self,
        request: Request<pb::WriteConfigRequest>,
    ) -> Answer<pb::WriteConfigResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_write_config(request).await
    }
    async fn update_live_policy(
        &self,
        request: Request<pb::UpdateLivePolicyRequest>,
    ) -> Answer<pb::Placement> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_update_live_policy(request).await
    }
    async fn restart_track(
        &self,
        request: Request<pb::RestartTrackRequest>,
    ) -> Answer<pb::TrackRolloutResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_restart_track(request).await
    }
    async fn scale_track(
        &self,
        request: Request<pb::ScaleTrackRequest>,
    ) -> Answer<pb::TrackRolloutResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_scale_track(request).await
    }
    async fn list_workers(
        &self,
        request: Request<pb::ListWorkersRequest>,
    ) -> Answer<pb::ListWorkersResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ReadGroup)?;
        self.do_list_workers(request).await
    }
    async fn teardown(
        &self,
        request: Request<pb::TeardownRequest>,
    ) -> Answer<pb::TeardownResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ManageGroup)?;
        self.do_teardown(request).await
    }
    async fn get_teardown(
        &self,
        request: Request<pb::TeardownRequest>,
    ) -> Answer<pb::TeardownResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ReadGroup)?;
        self.do_get_teardown(request).await
    }
    async fn store_package_report(
        &self,
        request: Request<pb::StorePackageReportRequest>,
    ) -> Answer<pb::StorePackageReportResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::Deploy)?;
        self.do_store_package_report(request).await
    }
    async fn list_packages(
        &self,
        request: Request<pb::ListPackagesRequest>,
    ) -> Answer<pb::ListPackagesResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ReadGroup)?;
        self.do_list_packages(request).await
    }
    async fn set_edge_weights(
        &self,
        request: Request<pb::SetEdgeWeightsRequest>,
    ) -> Answer<pb::SetEdgeWeightsResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ZoneActions)?;
        self.do_set_edge_weights(request).await
    }
    async fn list_endpoints(
        &self,
        request: Request<pb::ListEndpointsRequest>,
    ) -> Answer<pb::ListEndpointsResponse> {
        let group = request.get_ref().group.clone();
        allow(&request, &group, Action::ReadGroup)?;
        self.do_list_endpoints(request).await
    }
}
