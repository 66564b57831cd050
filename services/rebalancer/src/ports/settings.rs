//! [`SettingsPort`] over the deployer's `GetSettings`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ramen_clients::DeployerClient;
use ramen_proto::deployer::v1::GetSettingsRequest;

use super::{PortError, SchedulerSettings, SettingsPort};

pub struct GrpcSettings {
    deployer: Arc<dyn DeployerClient>,
}

impl GrpcSettings {
    pub fn new(deployer: Arc<dyn DeployerClient>) -> Self {
        Self { deployer }
    }
}

#[async_trait]
impl SettingsPort for GrpcSettings {
    async fn get(&self) -> Result<SchedulerSettings, PortError> {
        // Reading the Config settings is a super-admin call; the scheduler is a service actor.
        let settings =
            self.deployer.get_settings(&crate::model::scheduler(), GetSettingsRequest {}).await?;
        Ok(SchedulerSettings {
            enabled: settings.auto_rebalance_enabled,
            interval: Duration::from_secs(u64::from(settings.auto_rebalance_interval_seconds)),
        })
    }
}
