//! A real control plane for tests, on one platform as `ramen up` runs it: a `nats-server` of
//! its own, the embedded store in a temp dir, real auth (the audit log), and the rebalancer.
//! The server runs in operator mode and each service has its own bus connection as its own
//! NATS user (auth, zone-manager, rebalancer), as `ramen serve` runs them: a permission the
//! rebalancer's code needs and its user lacks fails these tests. Simulated nodes report as
//! the users the zone-manager mints for their placements.
//! The zone-manager is the real one where the test needs workers ([`Harness::with_zone_manager`]);
//! tests of cloud balancers use [`StaticZones`] instead, because the zone-manager cannot hold a
//! GCP or AWS placement until its Kubernetes provider exists.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use parking_lot::Mutex;
use std::collections::HashMap;

use ramen_access::audience::{AUTH, REBALANCER, ZONE_MANAGER};
use ramen_bus::auth::jwt::{Permissions, Rule};
use ramen_bus::auth::{NODE_LOAD_FILTER, NodeMinter, Role, node_load_subject};
use ramen_bus::testing::OperatorNats;
use ramen_bus::{Bus, PublishOptions, Schema, Subject};
use ramen_clients::fakes::test_channel;
use ramen_clients::{GrpcAuth, Signed};
use ramen_config::{Config, Secret};
use ramen_lifecycle::Shutdown;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::auth::v1::{AuditEntry, QueryAuditRequest};
use ramen_proto::common::v1::Track;
use ramen_proto::event::Event;
use ramen_proto::events::v1::{NodeLoadReport, SchedulerSettingsChanged};
use ramen_proto::rebalancer::v1::rebalancer_service_client::RebalancerServiceClient;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use ramen_rebalancer::lb::{AwsSettings, GcpSettings};
use ramen_rebalancer::model::{Caller, Provider, now_ms};
use ramen_rebalancer::ports::{
    GrpcAudit, GrpcSettings, GrpcZones, PlacementInfo, PortError, WorkerInfo, ZoneInfo, ZonePort,
};
use ramen_rebalancer::{Ports, Started};
use ramen_service::Platform;
use tempfile::TempDir;

pub fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Keys nothing verifies (a client of an address where no service listens).
fn nowhere_keys() -> Arc<ramen_access::TicketKeys> {
    Arc::new(ramen_access::TicketKeys::new(b"nowhere", None))
}

/// Short windows so tests see liveness, retries and leases move within seconds.
pub fn config(dir: &std::path::Path, nats: &str) -> Config {
    let mut config = Config { data_dir: dir.to_owned(), ..Config::default() };
    let listen = &mut config.listen;
    (listen.auth, listen.deployer, listen.zone_manager, listen.rebalancer, listen.admin) =
        (any(), any(), any(), any(), any());
    config.nats.url = nats.to_owned();
    config.auth.jwt_secret = Secret::new("test-signing-key-that-is-long-enough-0123456789");
    config.auth.secrets_key =
        Secret::new(base64::engine::general_purpose::STANDARD.encode([7u8; 32]));
    config.drain.timeout = Duration::from_secs(5);
    let r = &mut config.rebalancer;
    r.report_interval = Duration::from_millis(500);
    r.liveness_intervals = 3;
    r.recompute_interval = Duration::from_millis(200);
    r.placement_refresh = Duration::from_millis(500);
    r.retry_interval = Duration::from_millis(200);
    r.retry_deadline = Duration::from_secs(30);
    r.lease_ttl = Duration::from_secs(3);
    config
}

pub struct Harness {
    _nats: OperatorNats,
    pub dir: TempDir,
    /// The rebalancer's platform: its bus is the rebalancer's NATS user.
    pub platform: Platform,
    /// A connection that may do anything: what the tests arrange and watch with.
    pub observer: Bus,
    nodes: Reporters,
    pub auth: AuthServiceClient<Signed>,
    pub rebalancer: Started,
    pub client: RebalancerServiceClient<Signed>,
    pub zone_manager: Option<ZoneServiceClient<Signed>>,
}

impl Harness {
    /// Auth and the rebalancer on `zones`; `tweak` adjusts the config and the ports.
    pub async fn start(
        zones: Arc<dyn ZonePort>,
        tweak: impl FnOnce(&mut Config, &mut Ports),
    ) -> Self {
        Self::start_on(Some(zones), tweak).await
    }

    /// Auth, the real zone-manager (local provider, real workers) and the rebalancer.
    pub async fn with_zone_manager(tweak: impl FnOnce(&mut Config, &mut Ports)) -> Self {
        Self::start_on(None, tweak).await
    }

    async fn start_on(
        zones: Option<Arc<dyn ZonePort>>,
        tweak: impl FnOnce(&mut Config, &mut Ports),
    ) -> Self {
        let nats = OperatorNats::start().await.expect("nats-server starts");
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), &nats.url());
        config.nats.credentials = Secret::new(nats.credentials(Role::Auth).to_text());
        if zones.is_none() {
            crate::workers::zone_config(&mut config);
        }
        let mut ports = Ports {
            zones: Arc::new(StaticZones::default()),
            audit: Arc::new(GrpcAudit::new(Arc::new(ramen_clients::fakes::FakeAuth::default()))),
            // No deployer runs: settings come from `SchedulerSettingsChanged` events the tests publish, or the API.
            settings: Arc::new(GrpcSettings::new(Arc::new(
                ramen_clients::GrpcDeployer::connect_lazy("http://127.0.0.1:9", nowhere_keys())
                    .unwrap(),
            ))),
            aws: AwsSettings::default(),
            gcp: GcpSettings::default(),
        };
        tweak(&mut config, &mut ports);
        let platform =
            Platform::open(config, &nats.url(), Shutdown::new()).await.expect("platform opens");
        let as_user = |role: Role| {
            let (nats, platform) = (&nats, platform.clone());
            async move {
                let bus = nats.connect(role).await.expect("service connects as its user");
                let mut config = (*platform.config).clone();
                config.nats.credentials = Secret::new(nats.credentials(role).to_text());
                config.nats.signing_key = Secret::new(nats.keys.node_signing_seed().unwrap());
                Platform { bus, config: Arc::new(config), ..platform }
            }
        };
        let auth = ramen_auth::launch(platform.clone()).await.expect("auth starts");
        let auth_url = format!("http://{}", auth.running.addr);
        let keys = platform.tickets.clone();
        let auth_client = Arc::new(GrpcAuth::connect_lazy(&auth_url, keys.clone()).unwrap());
        ports.audit = Arc::new(GrpcAudit::new(auth_client.clone()));
        let mut zone_manager = None;
        ports.zones = match zones {
            Some(zones) => zones,
            None => {
                let started =
                    ramen_zone_manager::start_with(as_user(Role::ZoneManager).await, auth_client)
                        .await
                        .expect("zone-manager starts");
                let url = format!("http://{}", started.running.addr);
                zone_manager =
                    Some(ZoneServiceClient::new(test_channel(&url, keys.clone(), ZONE_MANAGER)));
                let zones = ramen_clients::GrpcZones::connect_lazy(&url, keys.clone()).unwrap();
                Arc::new(GrpcZones::new(Arc::new(zones)))
            }
        };
        let platform = as_user(Role::Rebalancer).await;
        let rebalancer =
            ramen_rebalancer::start_with(platform.clone(), ports).await.expect("rebalancer starts");
        let url = format!("http://{}", rebalancer.running.addr);
        let client = RebalancerServiceClient::new(test_channel(&url, keys.clone(), REBALANCER));
        let auth = AuthServiceClient::new(test_channel(&auth_url, keys, AUTH));
        let observer = nats.connect_unrestricted().await.expect("observer connects");
        let nodes = Reporters::new(&nats).await;
        Self { _nats: nats, dir, platform, observer, nodes, auth, rebalancer, client, zone_manager }
    }

    /// Publishes `report` as a node of its placement does (its minted user, its subject).
    pub async fn report(&self, report: &NodeLoadReport) {
        self.nodes.publish(report).await;
    }

    /// Publishes `report` as the nodes of `group` × `zone`, whatever the report claims.
    pub async fn report_as(&self, group: &str, zone: &str, report: &NodeLoadReport) {
        self.nodes.publish_as(group, zone, report).await;
    }

    /// Republishes `reports` (fresh timestamps) every 250 ms until the guard drops, as live
    /// nodes do.
    pub fn keep_reporting(&self, reports: Vec<NodeLoadReport>) -> Reporting {
        let nodes = self.nodes.clone();
        let task = tokio::spawn(async move {
            loop {
                for report in &reports {
                    let report = NodeLoadReport { at_unix_ms: now_ms(), ..report.clone() };
                    nodes.publish(&report).await;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        Reporting(task)
    }

    /// What another replica publishes after `UpdateSchedulerSettings` (the bus path, so a test
    /// can use a period shorter than the API accepts).
    pub async fn settings(&self, enabled: bool, interval_seconds: u32) {
        let event = SchedulerSettingsChanged { enabled, interval_seconds, ..Default::default() };
        let subject = ramen_service::subject::<SchedulerSettingsChanged>();
        self.platform.bus.publish(&subject, &event, PublishOptions::default()).await.unwrap();
    }

    /// Audit entries by `actor`, newest first (read as a service actor may).
    pub async fn audit(&self, actor: &str, action_prefix: &str) -> Vec<AuditEntry> {
        let query = QueryAuditRequest {
            actor: actor.into(),
            action_prefix: action_prefix.into(),
            ..Default::default()
        };
        let request = Caller::acting_as(ramen_proto::metadata::ACTOR_SCHEDULER).request(query);
        self.auth.clone().query_audit(request).await.unwrap().into_inner().entries
    }
}

/// Simulated nodes. Reports go out on each placement's own subject, from one connection whose
/// user may publish on every load subject (hundreds of simulated nodes, each with its own
/// connection, would take longer to connect than a report lives); [`Reporters::publish_as`]
/// connects as the user the zone-manager mints for one placement, as a real node does.
#[derive(Clone)]
struct Reporters {
    url: String,
    minter: NodeMinter,
    fleet: Bus,
    minted: Arc<tokio::sync::Mutex<HashMap<(String, String), Bus>>>,
}

impl Reporters {
    async fn new(nats: &OperatorNats) -> Self {
        let may = Permissions {
            publish: Rule::allow(vec![NODE_LOAD_FILTER.to_owned()]),
            subscribe: Rule::nothing(),
        };
        let fleet = nats.keys.user("simulated-nodes", &may).unwrap();
        let fleet = Bus::connect_as(&nats.url(), "simulated-nodes", Some(&fleet)).await.unwrap();
        Self { url: nats.url(), minter: nats.node_minter(), fleet, minted: Arc::default() }
    }

    async fn publish(&self, report: &NodeLoadReport) {
        let subject = load_subject(&report.group, &report.zone);
        self.fleet.publish_core(&subject, report, PublishOptions::default()).await.unwrap();
    }

    async fn publish_as(&self, group: &str, zone: &str, report: &NodeLoadReport) {
        let bus = {
            let mut minted = self.minted.lock().await;
            let key = (group.to_owned(), zone.to_owned());
            if !minted.contains_key(&key) {
                let credentials = self.minter.mint(group, zone).expect("node credentials");
                let name = format!("node-{group}-{zone}");
                let bus = Bus::connect_as(&self.url, &name, Some(&credentials)).await.unwrap();
                minted.insert(key.clone(), bus);
            }
            minted[&key].clone()
        };
        let subject = load_subject(group, zone);
        bus.publish_core(&subject, report, PublishOptions::default()).await.unwrap();
    }
}

fn load_subject(group: &str, zone: &str) -> Subject<NodeLoadReport> {
    Subject::new(node_load_subject(group, zone), Schema::new(NodeLoadReport::NAME, 1))
}

/// Simulated nodes reporting; they stop (and go silent) when this drops.
pub struct Reporting(tokio::task::JoinHandle<()>);

impl Drop for Reporting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub fn node(group: &str, zone: &str, node: &str, in_flight: u32, cap: u32) -> NodeLoadReport {
    NodeLoadReport {
        node_id: node.into(),
        group: group.into(),
        zone: zone.into(),
        track: Track::Worker as i32,
        in_flight,
        cap,
        ready: true,
        at_unix_ms: now_ms(),
        ..Default::default()
    }
}

/// Zones and placements from a table, for balancers the zone-manager cannot place yet.
#[derive(Default)]
pub struct StaticZones {
    pub zones: Mutex<Vec<ZoneInfo>>,
    pub placements: Mutex<Vec<PlacementInfo>>,
    /// Every `ScaleTrack` asked for: (group, zone, replicas).
    pub scaled: Mutex<Vec<(String, String, u32)>>,
}

impl StaticZones {
    pub fn with(zones: &[(&str, Provider, &str)], group: &str) -> Arc<Self> {
        let this = Self::default();
        for (name, provider, region) in zones {
            this.zones.lock().push(ZoneInfo {
                name: (*name).into(),
                provider: *provider,
                region: (*region).into(),
            });
            let placement = PlacementInfo {
                group: group.into(),
                zone: (*name).into(),
                worker_count: 1,
                max_workers: 2,
                active: true,
                stable_workers: 1,
            };
            this.placements.lock().push(placement);
        }
        Arc::new(this)
    }
}

#[async_trait]
impl ZonePort for StaticZones {
    async fn zones(&self) -> Result<Vec<ZoneInfo>, PortError> {
        Ok(self.zones.lock().clone())
    }
    async fn zone(&self, name: &str) -> Result<ZoneInfo, PortError> {
        self.zones
            .lock()
            .iter()
            .find(|z| z.name == name)
            .cloned()
            .ok_or_else(|| PortError::NotFound(format!("zone `{name}`")))
    }
    async fn placements(&self) -> Result<Vec<PlacementInfo>, PortError> {
        Ok(self.placements.lock().clone())
    }
    async fn workers(&self, _group: &str, _zone: &str) -> Result<Vec<WorkerInfo>, PortError> {
        Ok(Vec::new())
    }
    async fn set_edge_weights(
        &self,
        _: &Caller,
        _: &str,
        _: &str,
        _: &[(String, u32)],
    ) -> Result<Vec<(String, u32)>, PortError> {
        Err(PortError::Refused("cloud zones have no edge weights".into()))
    }
    async fn scale_stable(
        &self,
        _: &Caller,
        group: &str,
        zone: &str,
        replicas: u32,
        _: Duration,
    ) -> Result<bool, PortError> {
        self.scaled.lock().push((group.to_owned(), zone.to_owned(), replicas));
        Ok(true)
    }
}
