//! A real zone-manager for tests: its own `nats-server`, the embedded store and blob directory
//! in a temp dir, the local provider running real `ramen-runner` workers with the test
//! virtualenv's Python, and a gRPC client on its `ZoneService`. Only auth is a stand-in
//! ([`FakeAuth`]): it is another service, and the port is what the zone-manager codes against.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ramen_access::{Caller, Grants};
use ramen_clients::{AuthClient, Signed};
use ramen_config::Config;
use ramen_lifecycle::Shutdown;
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use ramen_service::Platform;
use ramen_testkit::Nats;
pub use ramen_testkit::workers::{pids_under, python, repo_root, runner_binary, site_packages};
use ramen_zone_manager::manager::ZoneManager;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

pub const KEY: &str = "rk_zone_test_0123456789";

/// Auth is another service: its in-memory stand-in records audit entries and answers key
/// hashes from a table.
pub use ramen_clients::fakes::FakeAuth;

/// What the harness's client calls as when a request names no caller: a super admin, so every
/// call passes the zone-manager's own access checks (tests of those name their caller).
pub fn test_admin() -> Caller {
    Caller::user("zm-test-admin", "req-test", Grants { super_admin: true, ..Grants::default() })
}

pub fn key_hash(key: &str) -> common::KeyHash {
    common::KeyHash {
        key_id: "k1".into(),
        sha256_hex: ramen_node_contract::key_hash(key),
        expires_at_unix_ms: 0,
        key_name: String::new(),
    }
}

/// The control-plane key the harness's services sign and verify caller tickets with.
pub const JWT_SECRET: &str = "zone-manager-test-signing-secret-0123456789";

pub fn config(data_dir: &Path, nats_url: &str) -> Config {
    let mut config = Config { data_dir: data_dir.to_owned(), ..Config::default() };
    config.auth.jwt_secret = ramen_config::Secret::new(JWT_SECRET);
    let any = "127.0.0.1:0".parse().unwrap();
    config.listen.zone_manager = any;
    config.listen.admin = any;
    config.nats.url = nats_url.to_owned();
    config.drain.timeout = Duration::from_secs(5);
    config.zone.worker_binary = runner_binary().display().to_string();
    config.zone.python = python().display().to_string();
    config.zone.site_packages = vec![site_packages().display().to_string()];
    config.zone.venv_without_pip = true;
    config.zone.restart_timeout = Duration::from_secs(60);
    config.zone.max_worker_count = 10;
    config
}

pub struct Harness {
    nats: Option<Nats>,
    dir: Option<TempDir>,
    data_dir: PathBuf,
    pub platform: Platform,
    pub manager: Arc<ZoneManager>,
    pub auth: Arc<FakeAuth>,
    pub client: ZoneServiceClient<Signed>,
    running: Option<ramen_service::Running>,
}

impl Harness {
    pub async fn start() -> Self {
        let nats = Nats::start().await.expect("nats-server starts");
        Self::start_on(nats, tempfile::tempdir().unwrap(), |_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        let nats = Nats::start().await.expect("nats-server starts");
        Self::start_on(nats, tempfile::tempdir().unwrap(), tweak).await
    }

    /// A zone-manager on an existing data directory and bus (a restart).
    pub async fn start_on(nats: Nats, dir: TempDir, tweak: impl FnOnce(&mut Config)) -> Self {
        let auth = Arc::new(FakeAuth::default());
        *auth.keys.lock() = vec![key_hash(KEY)];
        Self::start_with_auth(nats, dir, tweak, auth.clone(), auth).await
    }

    /// With another auth port than the fake (the real `AuthService` over gRPC).
    pub async fn start_with_auth(
        nats: Nats,
        dir: TempDir,
        tweak: impl FnOnce(&mut Config),
        port: Arc<dyn AuthClient>,
        auth: Arc<FakeAuth>,
    ) -> Self {
        Self::start_with_clouds(nats, dir, tweak, port, auth, None).await
    }

    /// With cloud adapters given (`None` = none: the cluster's pods only, so a test of pods
    /// with a `project` or `account_id` set never reaches the real Google or AWS APIs).
    pub async fn start_with_clouds(
        nats: Nats,
        dir: TempDir,
        tweak: impl FnOnce(&mut Config),
        port: Arc<dyn AuthClient>,
        auth: Arc<FakeAuth>,
        clouds: Option<ramen_zone_manager::Clouds>,
    ) -> Self {
        let mut config = config(dir.path(), &nats.url());
        tweak(&mut config);
        let platform =
            Platform::open(config, &nats.url(), Shutdown::new()).await.expect("platform opens");
        let clouds = clouds.unwrap_or_default();
        let started = ramen_zone_manager::start_with_clouds(platform.clone(), port, clouds)
            .await
            .expect("zone-manager starts");
        let addr: SocketAddr = started.running.addr;
        let url = format!("http://{addr}");
        let channel = ramen_clients::connect_lazy(
            &url,
            None,
            platform.tickets.clone(),
            ramen_access::audience::ZONE_MANAGER,
        )
        .unwrap();
        let client = ZoneServiceClient::new(channel.with_default_caller(test_admin()));
        let running = Some(started.running);
        let data_dir = dir.path().to_owned();
        Self {
            nats: Some(nats),
            dir: Some(dir),
            data_dir,
            platform,
            manager: started.manager,
            auth,
            client,
            running,
        }
    }

    /// Stops the service as SIGTERM would (workers drained and stopped), keeping the data.
    pub async fn stop(mut self) -> (Nats, TempDir) {
        self.platform.shutdown.trigger();
        if let Some(running) = self.running.take() {
            running.join(Duration::from_secs(10)).await;
        }
        self.platform.tasks.shutdown(Duration::from_secs(30)).await.expect("tasks stop");
        let (nats, dir) = (self.nats.take().unwrap(), self.dir.take().unwrap());
        (nats, dir)
    }

    pub fn zones_dir(&self) -> PathBuf {
        self.data_dir.join("zones")
    }

    pub fn placement_dir(&self, group: &str, zone: &str) -> PathBuf {
        self.zones_dir().join(zone).join(group)
    }

    /// The pid in a worker's pid file.
    pub fn worker_pid(&self, group: &str, zone: &str, worker: &str) -> Option<u32> {
        let file = self.placement_dir(group, zone).join("workers").join(worker).join("worker.pid");
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    }

    /// The addresses a worker's running process bound (its `ports.json`).
    pub fn worker_ports(
        &self,
        group: &str,
        zone: &str,
        worker: &str,
    ) -> Option<ramen_node_contract::NodePorts> {
        let dir = self.placement_dir(group, zone).join("workers").join(worker);
        let pid = self.worker_pid(group, zone, worker)?;
        ramen_node_contract::NodePorts::read(&dir.join("ports.json"), pid)
    }

    /// Packs `examples/<repo>` into the blob store as the group's snapshot at `commit`.
    pub async fn snapshot(&self, group: &str, repo: &str, commit: &str) -> common::Snapshot {
        let archive = ramen_node_contract::archive::pack_dir(&repo_root().join(repo)).unwrap();
        let digest = hex::encode(Sha256::digest(&archive));
        let location = format!("groups/{group}/snapshots/{commit}.tar.gz");
        // The platform's own blob store: the data dir's, or S3 when configured (a real cluster's
        // pods fetch from there).
        self.platform.blob.put(&location, archive.into()).await.unwrap();
        common::Snapshot {
            commit: commit.into(),
            location,
            digest: format!("sha256:{digest}"),
            requirements_hash: String::new(),
            environment: None,
        }
    }

    pub async fn create_local_zone(&mut self, zone: &str) {
        let request = pb::CreateZoneRequest {
            name: zone.into(),
            provider: common::Provider::Local as i32,
            ..Default::default()
        };
        self.client.create_zone(request).await.expect("zone created");
    }

    /// Zone, placement and a written config serving `examples/hello-repo` at `commit` with the
    /// test key (what a deploy's first two steps do).
    pub async fn configured(&mut self, group: &str, zone: &str, commit: &str) -> pb::Placement {
        if self.client.get_zone(pb::GetZoneRequest { name: zone.into() }).await.is_err() {
            self.create_local_zone(zone).await;
        }
        let ensure = pb::EnsurePlacementRequest { group: group.into(), zone: zone.into() };
        self.client.ensure_placement(ensure).await.expect("placement ensured");
        self.write_config(group, zone, commit, "examples/hello-repo").await
    }

    pub async fn write_config(
        &mut self,
        group: &str,
        zone: &str,
        commit: &str,
        repo: &str,
    ) -> pb::Placement {
        let snapshot = self.snapshot(group, repo, commit).await;
        let config = pb::NodeConfig {
            environment: "prod".into(),
            // The keys are the zone-manager's to ask auth for: the fake lists the test key.
            policy: Some(common::NodePolicy::default()),
            secrets: vec![pb::NodeSecret { name: "GREETING".into(), value: "hello".into() }],
            verbose: false,
            snapshot: Some(snapshot),
            deploy_keys: Vec::new(),
            egress_allow: Vec::new(),
        };
        let request =
            pb::WriteConfigRequest { group: group.into(), zone: zone.into(), config: Some(config) };
        self.client
            .write_config(request)
            .await
            .expect("config written")
            .into_inner()
            .placement
            .unwrap()
    }

    pub async fn restart(
        &mut self,
        group: &str,
        zone: &str,
        track: common::Track,
        timeout: Duration,
    ) -> pb::TrackRolloutResponse {
        let request = pb::RestartTrackRequest {
            group: group.into(),
            zone: zone.into(),
            track: track as i32,
            timeout: Some(timeout.try_into().unwrap()),
        };
        self.client.restart_track(request).await.expect("restart answered").into_inner()
    }

    pub async fn scale(
        &mut self,
        group: &str,
        zone: &str,
        track: common::Track,
        replicas: u32,
    ) -> pb::TrackRolloutResponse {
        let request = pb::ScaleTrackRequest {
            group: group.into(),
            zone: zone.into(),
            track: track as i32,
            replicas,
            timeout: Some(Duration::from_secs(60).try_into().unwrap()),
        };
        self.client.scale_track(request).await.expect("scale answered").into_inner()
    }

    pub async fn workers(&mut self, group: &str, zone: &str) -> Vec<pb::Worker> {
        let request =
            pb::ListWorkersRequest { group: group.into(), zone: zone.into(), ..Default::default() };
        self.client.list_workers(request).await.unwrap().into_inner().workers
    }

    pub async fn records(&self, collection: &str, group: &str) -> Vec<String> {
        let filter = ramen_store::Filter::new().eq("group", group);
        let query = ramen_store::Query::new().filter(filter);
        self.platform
            .store
            .find(collection, &query)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect()
    }

    /// Starts the teardown of `group` in `zone` and waits (a minute at most) until every
    /// placement of it is done.
    pub async fn teardown_done(&self, group: &str, zone: &str) {
        let teardown = pb::TeardownRequest { group: group.into(), zone: zone.into() };
        self.client.clone().teardown(teardown.clone()).await.expect("teardown started");
        ramen_testkit::eventually(
            &format!("the teardown of {zone} finishes"),
            Duration::from_secs(60),
            || {
                let mut client = self.client.clone();
                let teardown = teardown.clone();
                async move {
                    let progress = client
                        .get_teardown(teardown)
                        .await
                        .map_err(|e| e.to_string())?
                        .into_inner();
                    let done = progress
                        .placements
                        .iter()
                        .all(|p| p.state == pb::TeardownState::Done as i32);
                    if done { Ok(()) } else { Err(format!("{progress:?}")) }
                }
            },
        )
        .await;
    }
}

impl Drop for Harness {
    /// A failed test must not leave workers behind: kill every process group recorded under
    /// the data directory.
    fn drop(&mut self) {
        for pid in pids_under(&self.zones_dir()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

pub fn details(records: &[ramen_proto::auth::v1::AuditEntry]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for record in records {
        *counts.entry(record.action.clone()).or_default() += 1;
    }
    counts
}
