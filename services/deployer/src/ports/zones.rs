//! `ZoneService` as the deployer uses it (always as the `deployer` actor: the caller's rights
//! were checked here first), and a worker node's `RunnerService.Reload`.

use std::time::Duration;

use ramen_proto::common::v1::{PackageReport, PageRequest, Snapshot, StringList, Track};
use ramen_proto::runner::v1::runner_service_client::RunnerServiceClient;
use ramen_proto::runner::v1::{ReloadRequest, ReloadResponse};
use ramen_proto::zone::v1 as pb;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use tonic::transport::{Channel, Endpoint};

use super::auth::as_deployer;
use crate::error::{Error, Result};

const SERVICE: &str = "zone-manager";

fn status(status: tonic::Status) -> Error {
    Error::from_status(SERVICE, status)
}

fn duration(d: Duration) -> Option<prost_types::Duration> {
    prost_types::Duration::try_from(d).ok()
}

#[derive(Clone)]
pub struct ZoneClient {
    client: ZoneServiceClient<Channel>,
}

impl ZoneClient {
    /// Calls may wait for a rollout, so the per-call limit is the rollout timeout plus margin.
    pub fn new(endpoint: &str, rollout_timeout: Duration) -> Result<Self> {
        let channel = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| Error::Internal(format!("zone-manager endpoint {endpoint:?}: {e}")))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(rollout_timeout + Duration::from_secs(30))
            .connect_lazy();
        Ok(Self { client: ZoneServiceClient::new(channel) })
    }

    fn client(&self) -> ZoneServiceClient<Channel> {
        self.client.clone()
    }

    /// `None` when no such zone exists.
    pub async fn zone(&self, name: &str) -> Result<Option<pb::Zone>> {
        match self
            .client()
            .get_zone(as_deployer(pb::GetZoneRequest { name: name.to_owned() }))
            .await
        {
            Ok(zone) => Ok(Some(zone.into_inner())),
            Err(s) if s.code() == tonic::Code::NotFound => Ok(None),
            Err(s) => Err(status(s)),
        }
    }

    pub async fn ensure_placement(&self, group: &str, zone: &str) -> Result<pb::Placement> {
        let request = pb::EnsurePlacementRequest { group: group.to_owned(), zone: zone.to_owned() };
        Ok(self.client().ensure_placement(as_deployer(request)).await.map_err(status)?.into_inner())
    }

    pub async fn placements(&self, group: &str) -> Result<Vec<pb::Placement>> {
        let page = Some(PageRequest { page_size: 1000, page_token: String::new() });
        let request =
            pb::ListPlacementsRequest { group: group.to_owned(), zone: String::new(), page };
        Ok(self
            .client()
            .list_placements(as_deployer(request))
            .await
            .map_err(status)?
            .into_inner()
            .placements)
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
        Ok(self.client().write_config(as_deployer(request)).await.map_err(status)?.into_inner())
    }

    /// Replaces the blocked list and/or key hashes on running nodes (`None` keeps them).
    pub async fn live_policy(
        &self,
        group: &str,
        zone: &str,
        blocked: Option<Vec<String>>,
        keys: Option<Vec<ramen_proto::common::v1::KeyHash>>,
    ) -> Result<pb::Placement> {
        let request = pb::UpdateLivePolicyRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            blocked: blocked.map(|values| StringList { values }),
            key_hashes: keys.map(|keys| pb::KeyHashList { keys }),
        };
        Ok(self
            .client()
            .update_live_policy(as_deployer(request))
            .await
            .map_err(status)?
            .into_inner())
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
        Ok(self.client().restart_track(as_deployer(request)).await.map_err(status)?.into_inner())
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
        Ok(self.client().scale_track(as_deployer(request)).await.map_err(status)?.into_inner())
    }

    pub async fn workers(&self, group: &str, zone: &str, track: Track) -> Result<Vec<pb::Worker>> {
        let request = pb::ListWorkersRequest {
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: track as i32,
            page: Some(PageRequest { page_size: 1000, page_token: String::new() }),
        };
        Ok(self
            .client()
            .list_workers(as_deployer(request))
            .await
            .map_err(status)?
            .into_inner()
            .workers)
    }

    /// Starts (or resumes) the teardown of one placement, or all of the group's (`zone` empty).
    pub async fn teardown(&self, group: &str, zone: &str) -> Result<Vec<pb::TeardownProgress>> {
        let request = pb::TeardownRequest { group: group.to_owned(), zone: zone.to_owned() };
        match self.client().teardown(as_deployer(request)).await {
            Ok(answer) => Ok(answer.into_inner().placements),
            Err(s) if s.code() == tonic::Code::NotFound => Ok(Vec::new()),
            Err(s) => Err(status(s)),
        }
    }

    pub async fn teardown_progress(
        &self,
        group: &str,
        zone: &str,
    ) -> Result<Vec<pb::TeardownProgress>> {
        let request = pb::TeardownRequest { group: group.to_owned(), zone: zone.to_owned() };
        match self.client().get_teardown(as_deployer(request)).await {
            Ok(answer) => Ok(answer.into_inner().placements),
            Err(s) if s.code() == tonic::Code::NotFound => Ok(Vec::new()),
            Err(s) => Err(status(s)),
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
        self.client().store_package_report(as_deployer(request)).await.map_err(status)?;
        Ok(())
    }
}

/// `RunnerService.Reload` on one worker node (its admin address, `host:port`).
pub async fn reload(
    admin_address: &str,
    snapshot: Snapshot,
    timeout: Duration,
) -> Result<ReloadResponse> {
    let endpoint = Endpoint::from_shared(format!("http://{admin_address}"))
        .map_err(|e| Error::Internal(format!("worker admin address {admin_address:?}: {e}")))?
        .connect_timeout(Duration::from_secs(3))
        .timeout(timeout);
    let channel = endpoint.connect().await.map_err(|e| Error::Unavailable {
        service: "worker",
        message: format!("{admin_address}: {e}"),
    })?;
    let mut client = RunnerServiceClient::new(channel);
    let request = as_deployer(ReloadRequest { snapshot: Some(snapshot) });
    client
        .reload(request)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| Error::from_status("worker", s))
}
