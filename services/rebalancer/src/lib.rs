//! `rebalancer`: load cells from the nodes' load reports, Rebalance through the load-balancer
//! port (local edge weights, AWS target-group weights, GCP capacity scaler) with background
//! retries while a balancer reconciles, the auto-rebalance scheduler (one leader among the
//! replicas, by KV lease) and the autoscaler. See `docs/architecture.md` ("Rebalancer").

pub mod actions;
pub mod api;
pub mod autoscaler;
pub mod catalog;
pub mod cells;
pub mod error;
pub mod events;
pub mod lb;
pub mod model;
pub mod ports;
pub mod scheduler;
pub mod settings;
pub mod weights;

use std::sync::Arc;
use std::time::Duration;

use ramen_clients::{GrpcAuth, GrpcDeployer, GrpcZones as ZoneService};
use ramen_config::{Config, ServiceName};
use ramen_lifecycle::TaskCenter;
use ramen_proto::rebalancer::v1::rebalancer_service_server::RebalancerServiceServer;
use ramen_service::{Platform, Running};

use crate::actions::{ActionStore, Parts, Rebalancer};
use crate::autoscaler::Autoscaler;
use crate::catalog::CatalogHandle;
use crate::cells::{CellMetrics, LoadCells};
use crate::lb::{AwsBalancer, AwsSettings, Balancers, GcpBalancer, GcpSettings, LocalBalancer};
use crate::ports::{AuditPort, GrpcAudit, GrpcSettings, GrpcZones, SettingsPort, ZonePort};
use crate::scheduler::Scheduler;
use crate::settings::{Settings, SettingsError};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
    #[error(transparent)]
    Config(#[from] SettingsError),
    #[error("document store: {0}")]
    Store(#[from] ramen_store::StoreError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("service client: {0}")]
    Client(#[from] ramen_clients::UpstreamError),
}

/// What the rebalancer talks to. [`Ports::grpc`] is the deployment's; tests swap parts.
pub struct Ports {
    pub zones: Arc<dyn ZonePort>,
    pub audit: Arc<dyn AuditPort>,
    pub settings: Arc<dyn SettingsPort>,
    pub aws: AwsSettings,
    pub gcp: GcpSettings,
}

impl Ports {
    /// The zone-manager, auth and deployer at their configured endpoints; the clouds as
    /// `rebalancer.aws` / `rebalancer.gcp` say.
    pub fn grpc(
        config: &Config,
        tickets: Arc<ramen_access::TicketKeys>,
    ) -> Result<Self, StartError> {
        let r = &config.rebalancer;
        let zones =
            ZoneService::connect_lazy(&config.endpoint(ServiceName::ZoneManager), tickets.clone())?;
        let auth = GrpcAuth::connect_lazy(&config.endpoint(ServiceName::Auth), tickets.clone())?;
        let deployer =
            GrpcDeployer::connect_lazy(&config.endpoint(ServiceName::Deployer), tickets)?;
        Ok(Self {
            zones: Arc::new(GrpcZones::new(Arc::new(zones))),
            audit: Arc::new(GrpcAudit::new(Arc::new(auth))),
            settings: Arc::new(GrpcSettings::new(Arc::new(deployer))),
            aws: AwsSettings {
                region: r.aws.region.clone(),
                endpoint: r.aws.endpoint.clone(),
                static_keys: None,
            },
            gcp: GcpSettings {
                project: r.gcp.project.clone(),
                endpoint: r.gcp.endpoint.clone(),
                anonymous: r.gcp.anonymous,
            },
        })
    }
}

/// The running service and its parts (tests and `ramen up` reach them directly).
pub struct Started {
    pub running: Running,
    pub rebalancer: Arc<Rebalancer>,
    pub scheduler: Arc<Scheduler>,
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let ports = Ports::grpc(&platform.config, platform.tickets.clone())?;
    Ok(start_with(platform, ports).await?.running)
}

/// Starts the rebalancer on `platform` with `ports`: subscribes to load reports, follows zones
/// and placements, competes for the scheduler lease, and serves `RebalancerService`.
pub async fn start_with(platform: Platform, ports: Ports) -> Result<Started, StartError> {
    let config = &platform.config;
    let settings = Settings::from_config(&config.rebalancer)?;
    let (bus, tasks) = (&platform.bus, &platform.tasks);
    ramen_service::ensure_event_stream(bus, &config.nats).await?;
    let actions = ActionStore::open(platform.store.clone()).await?;
    let cells =
        Arc::new(LoadCells::new(settings.clone(), CellMetrics::register(&platform.metrics)));
    cells::spawn_ingest(&cells, bus, tasks).await?;
    let catalog = Arc::new(CatalogHandle::new(ports.zones.clone()));
    catalog.spawn_refresh(tasks, settings.placement_refresh);
    let balancers = Balancers {
        local: Arc::new(LocalBalancer::new(ports.zones.clone())),
        aws: Arc::new(AwsBalancer::new(ports.aws)),
        gcp: Arc::new(GcpBalancer::new(ports.gcp)),
    };
    let rebalancer = Arc::new(Rebalancer::new(Parts {
        cells: cells.clone(),
        catalog: catalog.clone(),
        actions,
        balancers,
        audit: ports.audit.clone(),
        events: events::Events::new(bus.clone()),
        tasks: tasks.clone(),
        settings: settings.clone(),
        replica: replica_id(),
    }));
    let autoscaler =
        Arc::new(Autoscaler::new(ports.zones.clone(), ports.audit, tasks.clone(), &settings));
    let settings_store = scheduler::SettingsStore::open(platform.store.clone()).await?;
    let scheduler =
        Scheduler::open(bus, rebalancer.clone(), autoscaler, settings_store, ports.settings)
            .await?;
    scheduler.spawn_settings(bus, tasks).await?;
    scheduler.spawn_leadership(tasks);
    scheduler.spawn_runs(tasks);
    spawn_recompute(&cells, &catalog, &scheduler, tasks, settings.recompute_interval);

    let api = api::RebalancerApi::new(rebalancer.clone(), scheduler.clone());
    let routes = tonic::service::Routes::new(RebalancerServiceServer::new(api));
    let (addr, handle) = platform
        .serve_grpc(config.listen.rebalancer, routes, ramen_access::audience::REBALANCER)
        .await?;
    Ok(Started { running: Running::new("rebalancer", addr, handle), rebalancer, scheduler })
}

/// Recomputes every cell each `every` (task `rebalancer-recompute`); the leader then lets the
/// autoscaler look at the new snapshot.
fn spawn_recompute(
    cells: &Arc<LoadCells>,
    catalog: &Arc<CatalogHandle>,
    scheduler: &Arc<Scheduler>,
    tasks: &TaskCenter,
    every: Duration,
) {
    let (cells, catalog, scheduler) = (cells.clone(), catalog.clone(), scheduler.clone());
    tasks.spawn("rebalancer-recompute", move |stop| async move {
        loop {
            let now = model::now_ms();
            let leader = scheduler.is_leader();
            let autoscaler = scheduler.autoscaler();
            let desired = |g: &str, z: &str| if leader { autoscaler.desired(g, z) } else { None };
            let snapshot = cells.recompute(now, &catalog.get(), desired);
            if leader {
                autoscaler.evaluate(&snapshot, now);
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    });
}

/// Unique per process: the pod name (`HOSTNAME`) where there is one, the pid, and a random
/// suffix so a restarted process never mistakes an old lease for its own.
fn replica_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "rebalancer".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..8])
}
