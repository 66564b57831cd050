//! `deployer`: groups, environments and the canary deploy pipeline as durable JetStream work.
//! See `docs/architecture.md` ("Deployer") for the job state machine and the durability model.
//!
//! - [`Deployer`] is three parts, each with one job, over one [`core::Core`] (collections,
//!   ports, bus, blob store, repo mirrors, settings); `grpc` serves them as `DeployerService`:
//!   - [`Registry`]: groups and environments and their deletion (`groups`, `environments`,
//!     `deletion`);
//!   - [`Jobs`]: the deploy jobs — the work queue, the lease, the pipeline, drain and resume,
//!     the sweeper, the DLQ (`jobs`, with `git` + `snapshot` for repo sync);
//!   - [`AppSettings`]: the GitHub App of the Config page and the repo credentials it gives
//!     (`config_settings`, `github_app`, `credentials`).
//! - `ports`: auth, the zone-manager, the worker nodes and the smoke test, injected
//!   ([`Ports`]) so the pipeline runs against the fakes of `ramen-clients` in tests.

mod artifacts;
mod caller;
mod config_settings;
mod conversions;
mod core;
mod credentials;
mod deletion;
mod environments;
mod error;
pub mod git;
mod github_app;
mod groups;
mod grpc;
pub mod jobs;
mod mcp_auth;
mod metrics;
pub mod model;
mod ports;
mod settings;
pub mod snapshot;
mod store;
mod validate;

use std::collections::HashSet;
use std::sync::Arc;

use ramen_crypto::seal::Sealer;
use ramen_lifecycle::TaskCenter;
use ramen_proto::deployer::v1::deployer_service_server::DeployerServiceServer;
use ramen_service::{Platform, Running};
use tokio_util::sync::CancellationToken;

pub use caller::Caller;
pub use error::{Error, Result};
pub use ports::{HttpSmoke, Ports, Smoke};
pub use settings::DeployerSettings;

use crate::core::Core;
use crate::git::RepoCache;
use crate::ports::{Auth, Events, Nodes, Zones};
use crate::store::Db;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
    #[error("deployer collections: {0}")]
    Store(#[from] ramen_store::StoreError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("{0}")]
    Config(#[from] ramen_config::ConfigError),
    #[error("{0}")]
    Setup(#[from] Error),
    #[error("service client: {0}")]
    Client(#[from] ramen_clients::UpstreamError),
}

/// The deployer: its three parts.
pub struct Deployer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) jobs: Arc<Jobs>,
    pub(crate) app: Arc<AppSettings>,
}

/// Groups and environments, and the saga that deletes a group.
pub struct Registry {
    pub(crate) core: Arc<Core>,
    /// A group's deletion cancels its live jobs.
    pub(crate) jobs: Arc<Jobs>,
    pub(crate) tasks: TaskCenter,
    /// Group deletion sagas this process runs now.
    pub(crate) sagas: parking_lot::Mutex<HashSet<String>>,
    pub(crate) crashed: CancellationToken,
}

/// The deploy jobs: submitting, claiming, running the pipeline, cancelling, the DLQ.
pub struct Jobs {
    pub(crate) core: Arc<Core>,
    /// Where a job's clone credentials come from.
    pub(crate) app: Arc<AppSettings>,
    /// This process's holder id in job leases.
    pub(crate) instance: String,
    /// Cancelled by [`Deployer::crash`]: every task of this deployer stops on the spot.
    pub(crate) crashed: CancellationToken,
    /// The job lease bucket, opened on first use.
    pub(crate) leases: tokio::sync::OnceCell<ramen_bus::Kv>,
    pub(crate) metrics: metrics::DeployMetrics,
}

/// The GitHub App settings of the Config page (sealed private key) and repo credentials.
pub struct AppSettings {
    pub(crate) core: Arc<Core>,
    pub(crate) sealer: Option<Sealer>,
}

impl Deployer {
    pub fn instance(&self) -> &str {
        &self.jobs.instance
    }

    /// Stops every background task of this deployer at once, without settling, checkpointing
    /// or releasing anything: what a killed process leaves behind. Tests use it to prove that
    /// another deployer resumes the work.
    pub fn crash(&self) {
        self.jobs.crashed.cancel();
    }
}

/// A started deployer: the gRPC server and the domain (tests reach it directly).
pub struct Started {
    pub running: Running,
    pub deployer: Arc<Deployer>,
}

/// `ramen up` / `ramen serve deployer`.
pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let settings = DeployerSettings::from_config(&platform.config);
    let ports = Ports::grpc(&platform.config, platform.tickets.clone())?;
    Ok(start_with(platform, settings, ports).await?.running)
}

/// Starts the deployer with explicit settings and ports: collections, streams, the job worker,
/// the dead-letter mover, the orphan sweeper, then `DeployerService`.
pub async fn start_with(
    platform: Platform,
    settings: DeployerSettings,
    ports: Ports,
) -> Result<Started, StartError> {
    let config = platform.config.clone();
    let db = Db::open(platform.store.clone()).await?;
    let events = Events::new(platform.bus.clone());
    events.ensure_stream(&config.nats).await?;
    let repos =
        RepoCache::new(settings.cache_dir.clone(), settings.local_mode, settings.git_timeout)
            .map_err(Error::from)?;
    let core = Arc::new(Core {
        db,
        auth: Auth(ports.auth),
        zones: Zones(ports.zones),
        nodes: Nodes(ports.nodes),
        smoke: ports.smoke,
        events,
        bus: platform.bus.clone(),
        blob: platform.blob.clone(),
        repos,
        settings,
        nats: config.nats.clone(),
    });
    let app = Arc::new(AppSettings {
        core: core.clone(),
        sealer: Sealer::from_config(&config.auth).ok(),
    });
    let crashed = CancellationToken::new();
    let jobs = Arc::new(Jobs {
        core: core.clone(),
        app: app.clone(),
        instance: format!("deployer-{}", uuid::Uuid::now_v7()),
        crashed: crashed.clone(),
        leases: Default::default(),
        metrics: Default::default(),
    });
    let registry = Arc::new(Registry {
        core,
        jobs: jobs.clone(),
        tasks: platform.tasks.clone(),
        sagas: Default::default(),
        crashed,
    });
    let deployer = Arc::new(Deployer { registry, jobs, app });
    deployer.jobs.metrics.register(&platform.metrics);
    jobs::start_background(&deployer, &platform).await?;
    deployer.registry.resume_deletions().await?;
    let service = DeployerServiceServer::new(grpc::DeployerGrpc(deployer.clone()));
    let routes = tonic::service::Routes::new(service);
    let (addr, handle) = platform
        .serve_grpc(config.listen.deployer, routes, ramen_access::audience::DEPLOYER)
        .await?;
    Ok(Started { running: Running::new("deployer", addr, handle), deployer })
}

impl Deployer {
    /// One pass of the sweeper: the jobs' orphans, dead letters and unpublished work, then the
    /// registry's unfinished deletions.
    pub(crate) async fn sweep(&self, kv: &ramen_bus::Kv) -> Result<()> {
        self.jobs.sweep(kv).await?;
        self.registry.finish_environment_deletions().await?;
        self.registry.resume_deletions().await
    }
}
