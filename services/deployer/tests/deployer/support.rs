//! One world per test: a real `nats-server`, the embedded store and blob directory in a temp
//! dir, the real auth and zone-manager (its local provider running real `ramen-runner` workers
//! with the test virtualenv's Python), and one or more deployers sharing them, each with its
//! own lifecycle so a test can drain, crash or add one. Nothing is a stand-in: the server runs
//! in NATS operator mode and auth, the zone-manager and every deployer connect as their own
//! users, as `ramen serve` runs them, so a permission the deployer's code needs and its user
//! lacks fails these tests (the workers report load as the users the zone-manager mints).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use ramen_bus::auth::Role;
use ramen_bus::testing::OperatorNats;
use ramen_clients::Signed;
use ramen_clients::fakes::AsGateway;
use ramen_config::{Config, Secret};
use ramen_deployer::{DeployerSettings, Started};
use ramen_lifecycle::{Health, Shutdown, TaskCenter};
use ramen_proto::auth::v1 as apb;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::common::v1 as common;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use ramen_proto::metadata;
use ramen_proto::zone::v1 as zpb;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use ramen_service::{Platform, Running};
use ramen_testkit::eventually;
pub use ramen_testkit::workers::{pids_under, repo_root};
use ramen_testkit::workers::{python, runner_binary, site_packages};
use tempfile::TempDir;

pub const MINUTE: Duration = Duration::from_secs(60);
/// How long a restarted track may take to become ready (a healthy one takes a few seconds).
pub const ROLLOUT: Duration = Duration::from_secs(30);
pub const SECRETS_KEY: [u8; 32] = [7; 32];

/// The world's configuration (its workers, keys and NATS); also what the ports tests start on.
pub fn test_config(data_dir: &Path, nats_url: &str) -> Config {
    let mut config = Config { data_dir: data_dir.to_owned(), ..Config::default() };
    let any = "127.0.0.1:0".parse().unwrap();
    config.listen.auth = any;
    config.listen.zone_manager = any;
    config.listen.deployer = any;
    config.listen.admin = any;
    config.nats.url = nats_url.to_owned();
    config.nats.ack_wait = Duration::from_secs(4);
    config.nats.max_deliver = 4;
    config.drain.timeout = Duration::from_secs(20);
    config.auth.jwt_secret = Secret::new("deployer-test-signing-key-that-is-long-enough");
    config.auth.secrets_key =
        Secret::new(base64::engine::general_purpose::STANDARD.encode(SECRETS_KEY));
    config.zone.worker_binary = runner_binary().display().to_string();
    config.zone.python = python().display().to_string();
    config.zone.site_packages = vec![site_packages().display().to_string()];
    config.zone.pip_args = vec!["--no-index".into()];
    config.zone.venv_without_pip = true;
    config.zone.restart_timeout = ROLLOUT;
    config.zone.max_worker_count = 10;
    config
}

/// `config` as the process of `role` is configured: its NATS user (and, for the zone-manager,
/// the node signing key).
pub fn as_user(mut config: Config, nats: &OperatorNats, role: Role) -> Config {
    config.nats.credentials = Secret::new(nats.credentials(role).to_text());
    if role == Role::ZoneManager {
        config.nats.signing_key = Secret::new(nats.keys.node_signing_seed().unwrap());
    }
    config
}

/// A platform sharing `base`'s store, blob and bus, with its own config and lifecycle.
fn view(base: &Platform, config: Config) -> Platform {
    let shutdown = Shutdown::new();
    Platform {
        config: Arc::new(config),
        health: Health::default(),
        tasks: TaskCenter::new(&shutdown.token()),
        shutdown,
        ..base.clone()
    }
}

/// Test settings: short lease and heartbeats, fast sweeps and retries.
pub fn fast(config: &Config) -> DeployerSettings {
    let mut s = DeployerSettings::from_config(config);
    s.lease_ttl = Duration::from_secs(3);
    s.heartbeat = Duration::from_millis(700);
    s.sweep_interval = Duration::from_millis(500);
    s.retry_delay = Duration::from_millis(300);
    s.zone_parallelism = 2;
    s.rollout_timeout = ROLLOUT;
    s.smoke_timeout = Duration::from_secs(20);
    s
}

pub struct Node {
    pub platform: Platform,
    pub started: Started,
}

impl Node {
    /// SIGTERM: the platform drains (tasks get the drain timeout) like `ramen serve` does.
    pub async fn stop(self) {
        self.platform.shutdown.trigger();
        let Started { running, .. } = self.started;
        running.join(Duration::from_secs(5)).await;
        let _ = self.platform.tasks.shutdown(Duration::from_secs(60)).await;
    }
}

pub struct World {
    pub nats: OperatorNats,
    pub dir: TempDir,
    pub base: Platform,
    /// A connection that may do anything: what the tests arrange and watch with.
    pub observer: ramen_bus::Bus,
    pub config: Config,
    pub auth: AuthServiceClient<Signed>,
    pub zones: ZoneServiceClient<Signed>,
    zone_node: Option<(Platform, Running)>,
    pub zone_addr: std::net::SocketAddr,
    pub admin: String,
}

impl World {
    pub async fn start() -> World {
        Self::start_with(|_| {}).await
    }

    /// With a change to the configuration every service of the world starts with.
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> World {
        let nats = OperatorNats::start().await.expect("nats-server starts");
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path(), &nats.url());
        tweak(&mut config);
        // The base platform (store, blob) is auth's: its bus is auth's user.
        let base = Platform::open(
            as_user(config.clone(), &nats, Role::Auth),
            &nats.url(),
            Shutdown::new(),
        )
        .await
        .expect("platform");
        let auth = ramen_auth::launch(base.clone()).await.expect("auth starts");
        config.endpoints.auth = format!("http://{}", auth.running.addr);
        let auth_client = AuthServiceClient::new(signed(
            &config.endpoints.auth,
            &base,
            ramen_access::audience::AUTH,
        ));
        let observer = nats.connect_unrestricted().await.expect("observer connects");
        let mut world = World {
            nats,
            dir,
            base,
            observer,
            config,
            auth: auth_client,
            zones: unreachable_client(),
            zone_node: None,
            zone_addr: "127.0.0.1:0".parse().unwrap(),
            admin: String::new(),
        };
        world.start_zone_manager().await;
        world.admin = world.user("root@example.com", true).await;
        world
    }

    /// Starts the zone-manager (again, on the same port after a stop).
    pub async fn start_zone_manager(&mut self) {
        let mut config = as_user(self.config.clone(), &self.nats, Role::ZoneManager);
        config.listen.zone_manager = self.zone_addr;
        let bus = self.nats.connect(Role::ZoneManager).await.expect("zone-manager connects");
        let platform = Platform { bus, ..view(&self.base, config) };
        let running = eventually("zone-manager starts", MINUTE, || {
            let platform = platform.clone();
            async move { ramen_zone_manager::start(platform).await.map_err(|e| e.to_string()) }
        })
        .await;
        self.zone_addr = running.addr;
        self.config.endpoints.zone_manager = format!("http://{}", running.addr);
        self.zones = ZoneServiceClient::new(signed(
            &self.config.endpoints.zone_manager,
            &self.base,
            ramen_access::audience::ZONE_MANAGER,
        ));
        self.zone_node = Some((platform, running));
    }

    /// Stops the zone-manager (SIGTERM), keeping its records.
    pub async fn stop_zone_manager(&mut self) {
        let (platform, running) = self.zone_node.take().expect("zone-manager running");
        platform.shutdown.trigger();
        running.join(Duration::from_secs(10)).await;
        let _ = platform.tasks.shutdown(Duration::from_secs(30)).await;
    }

    pub fn deployer_config(&self) -> Config {
        self.config.clone()
    }

    pub async fn deployer(&self) -> Node {
        let config = self.deployer_config();
        let settings = fast(&config);
        self.deployer_with(config, settings).await
    }

    pub async fn deployer_with(&self, config: Config, settings: DeployerSettings) -> Node {
        let bus = self.nats.connect(Role::Deployer).await.unwrap();
        let config = as_user(config, &self.nats, Role::Deployer);
        let platform = Platform { bus, ..view(&self.base, config) };
        let ports =
            ramen_deployer::Ports::grpc(&platform.config, platform.tickets.clone()).unwrap();
        let started = ramen_deployer::start_with(platform.clone(), settings, ports)
            .await
            .expect("deployer starts");
        Node { platform, started }
    }

    pub async fn user(&self, email: &str, super_admin: bool) -> String {
        let request = apb::CreateUserRequest {
            email: email.into(),
            password: "a long enough passphrase".into(),
            super_admin,
        };
        let created = self
            .auth
            .clone()
            .create_user(as_actor(metadata::ACTOR_DEPLOYER, request))
            .await
            .expect("user");
        created.into_inner().user.unwrap().id
    }

    pub async fn zone(&self, name: &str) {
        let request = zpb::CreateZoneRequest {
            name: name.into(),
            provider: common::Provider::Local as i32,
            ..Default::default()
        };
        self.zones
            .clone()
            .create_zone(as_actor(metadata::ACTOR_DEPLOYER, request))
            .await
            .expect("zone created");
    }

    pub async fn secret(&self, group: &str, name: &str, value: &str) {
        let request = apb::SetSecretRequest {
            group: group.into(),
            name: name.into(),
            scope: None,
            value: value.into(),
        };
        self.auth.clone().set_secret(as_actor(&self.admin, request)).await.expect("secret set");
    }

    /// A key for `group`, as a client would hold it.
    pub async fn mcp_key(&self, group: &str) -> String {
        let request = apb::CreateMcpKeyRequest {
            group: group.into(),
            name: "client".into(),
            ..Default::default()
        };
        let created = self
            .auth
            .clone()
            .create_mcp_key(as_actor(&self.admin, request))
            .await
            .expect("key created");
        created.into_inner().plaintext
    }

    pub async fn workers(&self, group: &str, zone: &str, track: common::Track) -> Vec<zpb::Worker> {
        let request = zpb::ListWorkersRequest {
            group: group.into(),
            zone: zone.into(),
            track: track as i32,
            page: None,
        };
        match self.zones.clone().list_workers(as_actor(metadata::ACTOR_DEPLOYER, request)).await {
            Ok(answer) => answer.into_inner().workers,
            Err(_) => Vec::new(),
        }
    }

    pub fn zones_dir(&self) -> PathBuf {
        self.dir.path().join("zones")
    }
}

impl Drop for World {
    /// A failed test must not leave workers behind.
    fn drop(&mut self) {
        for pid in pids_under(&self.zones_dir()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn unreachable_client() -> ZoneServiceClient<Signed> {
    let keys = Arc::new(ramen_access::TicketKeys::new(b"nowhere", None));
    ZoneServiceClient::new(
        ramen_clients::connect_lazy(
            "http://127.0.0.1:1",
            None,
            keys,
            ramen_access::audience::ZONE_MANAGER,
        )
        .unwrap(),
    )
}

/// A channel to the service `audience` at `url`, signed with the world's control-plane key.
fn signed(url: &str, base: &Platform, audience: &str) -> Signed {
    ramen_clients::connect_lazy(url, None, base.tickets.clone(), audience).unwrap()
}

/// A request on behalf of `actor` (a user or a service actor). The deployer client fills a
/// user's grants from auth the way the api-gateway does ([`AsGateway`]).
pub fn as_actor<T>(actor: &str, message: T) -> tonic::Request<T> {
    ramen_access::Caller::new(actor, "req-test").request(message)
}

/// The deployer as the api-gateway calls it: users' grants from auth, signed.
pub async fn client(node: &Node) -> DeployerServiceClient<AsGateway> {
    let url = format!("http://{}", node.started.running.addr);
    let auth = AuthServiceClient::new(signed(
        &node.platform.config.endpoints.auth,
        &node.platform,
        ramen_access::audience::AUTH,
    ));
    DeployerServiceClient::new(AsGateway::new(
        signed(&url, &node.platform, ramen_access::audience::DEPLOYER),
        auth,
    ))
}

/// The job once `done` holds for it.
pub async fn job_when(
    client: &DeployerServiceClient<AsGateway>,
    actor: &str,
    job_id: &str,
    what: &str,
    deadline: Duration,
    done: impl Fn(&pb::DeployJob) -> bool,
) -> pb::DeployJob {
    eventually(what, deadline, || {
        let mut client = client.clone();
        let request = as_actor(actor, pb::GetJobRequest { job_id: job_id.into() });
        let done = &done;
        async move {
            let job = client.get_job(request).await.map_err(|e| e.to_string())?.into_inner();
            if done(&job) {
                Ok(job)
            } else {
                Err(format!(
                    "state {:?}, error {:?}, zones {:?}",
                    job.state(),
                    job.error,
                    summary(&job)
                ))
            }
        }
    })
    .await
}

pub fn terminal(job: &pb::DeployJob) -> bool {
    use common::JobState::*;
    matches!(job.state(), Succeeded | Failed | Cancelled | DeadLettered)
}

/// `zone: step=status ...` for assertion messages.
pub fn summary(job: &pb::DeployJob) -> Vec<String> {
    job.zones
        .iter()
        .map(|z| {
            let steps: Vec<String> =
                z.steps.iter().map(|s| format!("{:?}={:?}", s.step(), s.status())).collect();
            format!("{}: {}", z.zone, steps.join(" "))
        })
        .collect()
}

pub fn step<'a>(job: &'a pb::DeployJob, zone: &str, step: common::DeployStep) -> &'a pb::StepRun {
    let zone = job
        .zones
        .iter()
        .find(|z| z.zone == zone)
        .unwrap_or_else(|| panic!("zone {zone} in {job:?}"));
    zone.steps.iter().find(|s| s.step() == step).unwrap_or_else(|| panic!("{step:?} in {zone:?}"))
}
