//! `ZoneService` as other services call it.

use std::time::Duration;

use ramen_proto::zone::v1 as pb;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;

use crate::Signed;
use crate::macros::{CallBudget, client};

client! {
    /// What the deployer (placements, config, rollouts, teardown, package reports), the
    /// rebalancer (zones, placements, workers, edge weights, autoscaling) and the MCP edge
    /// (endpoints) ask of the zone-manager.
    trait ZoneClient, grpc GrpcZones, service "zone-manager", proto ZoneServiceClient<Signed>;
    fn get_zone(pb::GetZoneRequest) -> pb::Zone;
    fn list_zones(pb::ListZonesRequest) -> pb::ListZonesResponse;
    fn list_zone_summaries(pb::ListZoneSummariesRequest) -> pb::ListZoneSummariesResponse;
    fn ensure_placement(pb::EnsurePlacementRequest) -> pb::Placement;
    fn list_placements(pb::ListPlacementsRequest) -> pb::ListPlacementsResponse;
    fn build_environment(pb::BuildEnvironmentRequest) -> pb::BuildEnvironmentResponse;
    fn write_config(pb::WriteConfigRequest) -> pb::WriteConfigResponse;
    fn update_live_policy(pb::UpdateLivePolicyRequest) -> pb::Placement;
    fn restart_track(pb::RestartTrackRequest) -> pb::TrackRolloutResponse;
    fn scale_track(pb::ScaleTrackRequest) -> pb::TrackRolloutResponse;
    fn list_workers(pb::ListWorkersRequest) -> pb::ListWorkersResponse;
    fn teardown(pb::TeardownRequest) -> pb::TeardownResponse;
    fn get_teardown(pb::TeardownRequest) -> pb::TeardownResponse;
    fn store_package_report(pb::StorePackageReportRequest) -> pb::StorePackageReportResponse;
    fn set_edge_weights(pb::SetEdgeWeightsRequest) -> pb::SetEdgeWeightsResponse;
    fn list_endpoints(pb::ListEndpointsRequest) -> pb::ListEndpointsResponse;
}

impl CallBudget for pb::GetZoneRequest {}
impl CallBudget for pb::ListZonesRequest {}
impl CallBudget for pb::ListZoneSummariesRequest {}
impl CallBudget for pb::EnsurePlacementRequest {}
impl CallBudget for pb::ListPlacementsRequest {}
impl CallBudget for pb::WriteConfigRequest {}
impl CallBudget for pb::UpdateLivePolicyRequest {}
impl CallBudget for pb::ListWorkersRequest {}
impl CallBudget for pb::TeardownRequest {}
impl CallBudget for pb::StorePackageReportRequest {}
impl CallBudget for pb::SetEdgeWeightsRequest {}
impl CallBudget for pb::ListEndpointsRequest {}

/// A rollout call waits for the rollout: its own timeout plus a margin to answer.
fn rollout_budget(timeout: Option<&prost_types::Duration>) -> Duration {
    let wait =
        timeout.and_then(|d| Duration::try_from(*d).ok()).unwrap_or(Duration::from_secs(300));
    wait + Duration::from_secs(30)
}

impl CallBudget for pb::RestartTrackRequest {
    fn budget(&self) -> Duration {
        rollout_budget(self.timeout.as_ref())
    }
}

impl CallBudget for pb::BuildEnvironmentRequest {
    fn budget(&self) -> Duration {
        rollout_budget(self.timeout.as_ref())
    }
}

impl CallBudget for pb::ScaleTrackRequest {
    fn budget(&self) -> Duration {
        rollout_budget(self.timeout.as_ref())
    }
}
