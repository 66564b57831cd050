//! `DeployerService` as other services call it.

use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;

use crate::Signed;
use crate::macros::{CallBudget, client};

client! {
    /// What the MCP edge asks of the deployer: an environment's zones.
    trait DeployerClient, grpc GrpcDeployer, service "deployer", proto DeployerServiceClient<Signed>;
    fn get_environment(pb::GetEnvironmentRequest) -> pb::Environment;
    fn get_group(pb::GetGroupRequest) -> pb::Group;
    fn get_settings(pb::GetSettingsRequest) -> pb::Settings;
}

impl CallBudget for pb::GetEnvironmentRequest {}
impl CallBudget for pb::GetGroupRequest {}
impl CallBudget for pb::GetSettingsRequest {}
