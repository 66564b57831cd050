//! `RebalancerService` as other services call it.

use ramen_proto::rebalancer::v1 as pb;
use ramen_proto::rebalancer::v1::rebalancer_service_client::RebalancerServiceClient;

use crate::Signed;
use crate::macros::{CallBudget, client};

client! {
    /// What other services read of the rebalancer: load cells (the zones page, placement
    /// views) and the scheduler's state.
    trait RebalancerClient, grpc GrpcRebalancer, service "rebalancer", proto RebalancerServiceClient<Signed>;
    fn list_load_cells(pb::ListLoadCellsRequest) -> pb::ListLoadCellsResponse;
    fn get_scheduler_status(pb::GetSchedulerStatusRequest) -> pb::SchedulerStatus;
}

impl CallBudget for pb::ListLoadCellsRequest {}
impl CallBudget for pb::GetSchedulerStatusRequest {}
