//! [`SettingsPort`] over the deployer's `GetSettings`.

use std::time::Duration;

use async_trait::async_trait;
use ramen_proto::deployer::v1::GetSettingsRequest;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use tonic::transport::Channel;

use super::{PortError, SchedulerSettings, SettingsPort, lazy_channel, request};

pub struct GrpcSettings {
    client: DeployerServiceClient<Channel>,
}

impl GrpcSettings {
    pub fn new(endpoint: &str) -> Result<Self, PortError> {
        Ok(Self {
            client: DeployerServiceClient::new(lazy_channel(endpoint, Duration::from_secs(5))?),
        })
    }
}

#[async_trait]
impl SettingsPort for GrpcSettings {
    async fn get(&self) -> Result<SchedulerSettings, PortError> {
        // Reading the Config settings is a super-admin call; the scheduler is a service actor.
        let answer = self
            .client
            .clone()
            .get_settings(request(&crate::model::scheduler(), GetSettingsRequest {}))
            .await;
        let settings = answer.map_err(|s| PortError::from_status("deployer", s))?.into_inner();
        Ok(SchedulerSettings {
            enabled: settings.auto_rebalance_enabled,
            interval: Duration::from_secs(u64::from(settings.auto_rebalance_interval_seconds)),
        })
    }
}
