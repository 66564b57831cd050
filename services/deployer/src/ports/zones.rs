//! The zone-manager as the deployer uses it (always as the `deployer` actor: the caller's
//! rights were checked here first).

use std::sync::Arc;
use std::time::Duration;

use ramen_clients::ZoneClient;
use ramen_proto::common::v1::{PackageReport, PageRequest, StringList, Track};
use ramen_proto::zone::v1 as pb;

use crate::caller::deployer;
use crate::error::Result;

fn duration(d: Duration) -> Option<prost_types::Duration> {
    prost_types::Duration::try_from(d).ok()
}

/// Always as the `deployer` actor: the caller's rights were checked here first.
#[derive(Clone)]
pub struct Zones(pub Arc<dyn ZoneClient>);

impl Zones {
    /// `None` when no such zone exists.
    pub async fn zone(&self, name: &str) -> Result<Option<pb::Zone>> {
        match self.0.get_zone(&deployer(), pb::GetZoneRequest { name: name.to_owned() }).await {
            Ok(zone) => Ok(Some(zone)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn ensure_placement(&self, group: &str, zone: &str) -> Result<pb::Placement> {
        let request = pb::EnsurePlacementRequest { group: group.to_owned(), zone: zone.to_owned() };
        Ok(self.0.ensure_placement(&deployer(), request).await?)
    }

    pub async fn placements(&self, group: &str) -> Result<Vec<pb::Placement>> {
        let page = Some(PageRequest { page_size: 1000, page_token: String::new() });
        let request =
            pb::ListPlacementsRequest { group: group.to_owned(), zone: String::new(), page };
        Ok(self.0.list_placements(&deployer(), request).await?.placements)
    }

    pub async fn write_config(
        &self,
        group: &str,
        zone: &str,
        config: pb::NodeConfig,
    ) -> Result<pb::WriteConfigResponse> {
        let request = pb::WriteConfigRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            config: Some(config),
        };
        Ok(self.0.write_config(&deployer(), request).await?)
    }

    /// Replaces the blocked list and/or key hashes on running nodes (`None` keeps them).
    pub async fn live_policy(
        &self,
        group: &str,
        zone: &str,
        blocked: Option<Vec<String>>,
        keys: Option<Vec<ramen_proto::common::v1::KeyHash>>,
        auth: Option<ramen_proto::common::v1::McpAuth>,
    ) -> Result<pb::Placement> {
        let request = pb::UpdateLivePolicyRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            blocked: blocked.map(|values| StringList { values }),
            key_hashes: keys.map(|keys| pb::KeyHashList { keys }),
            clear_deploy_keys: false,
            auth,
        };
        Ok(self.0.update_live_policy(&deployer(), request).await?)
    }

    /// Builds (or finds) the snapshot's Python environment where the zone's workers run.
    pub async fn build_environment(
        &self,
        group: &str,
        zone: &str,
        snapshot: ramen_proto::common::v1::Snapshot,
        timeout: Duration,
    ) -> Result<pb::BuildEnvironmentResponse> {
        let request = pb::BuildEnvironmentRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            snapshot: Some(snapshot),
            timeout: duration(timeout),
        };
        Ok(self.0.build_environment(&deployer(), request).await?)
    }

    /// Drops the keys of the last deploy (its smoke key) from the placement's nodes.
    pub async fn clear_deploy_keys(&self, group: &str, zone: &str) -> Result<pb::Placement> {
        let request = pb::UpdateLivePolicyRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            clear_deploy_keys: true,
            ..Default::default()
        };
        Ok(self.0.update_live_policy(&deployer(), request).await?)
    }

    pub async fn restart(
        &self,
        group: &str,
        zone: &str,
        track: Track,
        timeout: Duration,
    ) -> Result<pb::TrackRolloutResponse> {
        let request = pb::RestartTrackRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: track as i32,
            timeout: duration(timeout),
        };
        Ok(self.0.restart_track(&deployer(), request).await?)
    }

    pub async fn scale(
        &self,
        group: &str,
        zone: &str,
        track: Track,
        replicas: u32,
        timeout: Duration,
    ) -> Result<pb::TrackRolloutResponse> {
        let request = pb::ScaleTrackRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: track as i32,
            replicas,
            timeout: duration(timeout),
        };
        Ok(self.0.scale_track(&deployer(), request).await?)
    }

    pub async fn workers(&self, group: &str, zone: &str, track: Track) -> Result<Vec<pb::Worker>> {
        let request = pb::ListWorkersRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: track as i32,
            page: Some(PageRequest { page_size: 1000, page_token: String::new() }),
        };
        Ok(self.0.list_workers(&deployer(), request).await?.workers)
    }

    /// Starts (or resumes) the teardown of one placement, or all of the group's (`zone` empty).
    pub async fn teardown(&self, group: &str, zone: &str) -> Result<Vec<pb::TeardownProgress>> {
        let request = pb::TeardownRequest { group: group.to_owned(), zone: zone.to_owned() };
        match self.0.teardown(&deployer(), request).await {
            Ok(answer) => Ok(answer.placements),
            Err(e) if e.is_not_found() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn teardown_progress(
        &self,
        group: &str,
        zone: &str,
    ) -> Result<Vec<pb::TeardownProgress>> {
        let request = pb::TeardownRequest { group: group.to_owned(), zone: zone.to_owned() };
        match self.0.get_teardown(&deployer(), request).await {
            Ok(answer) => Ok(answer.placements),
            Err(e) if e.is_not_found() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn store_packages(
        &self,
        group: &str,
        zone: &str,
        environment: &str,
        commit: &str,
        packages: Vec<PackageReport>,
    ) -> Result<()> {
        let request = pb::StorePackageReportRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            environment: environment.to_owned(),
            commit: commit.to_owned(),
            packages,
        };
        self.0.store_package_report(&deployer(), request).await?;
        Ok(())
    }
}
