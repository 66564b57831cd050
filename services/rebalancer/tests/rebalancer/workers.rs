//! Real workers through the real zone-manager: the local provider runs `ramen-runner` with the
//! test virtualenv's Python, serving `examples/hello-repo`.

use std::time::Duration;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_config::Config;
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use sha2::{Digest, Sha256};

use crate::support::Harness;
pub use ramen_testkit::workers::pids_under;
use ramen_testkit::workers::{python, repo_root, runner_binary, site_packages};

pub const KEY: &str = "rk_rebalancer_test_0123456789";

/// The zone-manager's local provider settings; real nodes report every 2 s, so liveness
/// spans three of their intervals.
pub fn zone_config(config: &mut Config) {
    config.zone.worker_binary = runner_binary().display().to_string();
    config.zone.python = python().display().to_string();
    config.zone.site_packages = vec![site_packages().display().to_string()];
    config.zone.venv_without_pip = true;
    config.zone.restart_timeout = Duration::from_secs(90);
    config.zone.max_worker_count = 10;
    config.rebalancer.report_interval = Duration::from_secs(2);
}

impl Harness {
    pub fn zones(
        &self,
    ) -> ramen_proto::zone::v1::zone_service_client::ZoneServiceClient<ramen_clients::Signed> {
        self.zone_manager.clone().expect("started with the zone-manager")
    }

    /// Zone, placement, config and `replicas` ready stable workers of `group` × `zone`.
    pub async fn deploy(&self, group: &str, zone: &str, replicas: u32) -> Vec<pb::Worker> {
        let mut zones = self.zones();
        let create = pb::CreateZoneRequest {
            name: zone.into(),
            provider: common::Provider::Local as i32,
            ..Default::default()
        };
        zones.create_zone(create).await.expect("zone created");
        zones
            .ensure_placement(pb::EnsurePlacementRequest { group: group.into(), zone: zone.into() })
            .await
            .expect("placement");
        let archive =
            ramen_node_contract::archive::pack_dir(&repo_root().join("examples/hello-repo"))
                .unwrap();
        let digest = hex::encode(Sha256::digest(&archive));
        let location = format!("groups/{group}/snapshots/c1.tar.gz");
        let blob = LocalDirStore::open(self.dir.path().join("blobs")).unwrap();
        blob.put(&location, archive.into()).await.unwrap();
        let snapshot = common::Snapshot {
            commit: "c1".into(),
            location,
            digest: format!("sha256:{digest}"),
            requirements_hash: String::new(),
            environment: None,
        };
        let key = common::KeyHash {
            key_id: "k1".into(),
            sha256_hex: ramen_node_contract::key_hash(KEY),
            expires_at_unix_ms: 0,
            key_name: String::new(),
        };
        // A deploy's own key (auth's keys are the zone-manager's to ask for; there are none).
        let node = pb::NodeConfig {
            environment: "prod".into(),
            snapshot: Some(snapshot),
            deploy_keys: vec![key],
            ..Default::default()
        };
        let write =
            pb::WriteConfigRequest { group: group.into(), zone: zone.into(), config: Some(node) };
        zones.write_config(write).await.expect("config written");
        let timeout = Some(Duration::from_secs(90).try_into().unwrap());
        let track = common::Track::Worker as i32;
        let scale = pb::ScaleTrackRequest {
            group: group.into(),
            zone: zone.into(),
            track,
            replicas,
            timeout,
        };
        let rollout = zones.scale_track(scale).await.expect("scaled").into_inner();
        assert!(rollout.ready, "{rollout:?}");
        self.stable_workers(group, zone).await
    }

    pub async fn stable_workers(&self, group: &str, zone: &str) -> Vec<pb::Worker> {
        let list = pb::ListWorkersRequest {
            group: group.into(),
            zone: zone.into(),
            track: common::Track::Worker as i32,
            page: None,
        };
        let mut workers = self.zones().list_workers(list).await.unwrap().into_inner().workers;
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        workers
    }
}

impl Drop for Harness {
    /// A failed test must not leave workers behind.
    fn drop(&mut self) {
        for pid in pids_under(&self.dir.path().join("zones")) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
