//! `deployer`: groups, environments and the canary deploy pipeline as durable JetStream work.
//! See `docs/architecture.md` ("Deployer") for the job state machine and the durability model.
//!
//! - [`Deployer`] is the domain; `grpc` serves it as `DeployerService`.
//! - `jobs`: the work queue, the lease, the pipeline, drain and resume, the sweeper, the DLQ.
//! - `git` + `snapshot`: repo sync into the group's bucket prefix.
//! - `groups`, `environments`, `deletion`, `config_settings`: the rest of the API.

mod caller;
mod config_settings;
mod conversions;
mod credentials;
mod deletion;
mod environments;
mod error;
pub mod git;
mod github_app;
mod groups;
mod grpc;
pub mod jobs;
mod metrics;
pub mod model;
mod ports;
mod settings;
pub mod snapshot;
mod store;
mod validate;

use std::collections::HashSet;
use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_bus::Bus;
use ramen_crypto::seal::Sealer;
use ramen_lifecycle::TaskCenter;
use ramen_proto::deployer::v1::deployer_service_server::DeployerServiceServer;
use ramen_service::{Platform, Running};
use tokio_util::sync::CancellationToken;

pub use caller::Caller;
pub use error::{Error, Result};
pub use ports::{HttpSmoke, Ports, Smoke};
pub use settings::DeployerSettings;

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

/// The deployer domain: its collections, the services it drives and its work queue.
pub struct Deployer {
    pub(crate) db: Db,
    pub(crate) auth: Auth,
    pub(crate) zones: Zones,
    pub(crate) nodes: Nodes,
    pub(crate) smoke: Arc<dyn Smoke>,
    pub(crate) events: Events,
    pub(crate) bus: Bus,
    pub(crate) blob: Arc<dyn BlobStore>,
    pub(crate) repos: RepoCache,
    pub(crate) sealer: Option<Sealer>,
    pub(crate) settings: DeployerSettings,
    pub(crate) nats: ramen_config::NatsConfig,
    /// This process's holder id in job leases.
    pub(crate) instance: String,
    /// Cancelled by [`Deployer::crash`]: every task of this deployer stops on the spot.
    pub(crate) crashed: CancellationToken,
    pub(crate) tasks: TaskCenter,
    /// Group deletion sagas this process runs now.
    pub(crate) sagas: parking_lot::Mutex<HashSet<String>>,
    /// The job lease bucket, opened on first use.
    pub(crate) leases: tokio::sync::OnceCell<ramen_bus::Kv>,
    pub(crate) metrics: metrics::DeployMetrics,
}

impl Deployer {
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Stops every background task of this deployer at once, without settling, checkpointing
    /// or releasing anything: what a killed process leaves behind. Tests use it to prove that
    /// another deployer resumes the work.
    pub fn crash(&self) {
        self.crashed.cancel();
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
    let sealer = Sealer::from_config(&config.auth).ok();
    let deployer = Arc::new(Deployer {
        db,
        auth: Auth(ports.auth),
        zones: Zones(ports.zones),
        nodes: Nodes(ports.nodes),
        smoke: ports.smoke,
        events,
        bus: platform.bus.clone(),
        blob: platform.blob.clone(),
        repos,
        sealer,
        settings,
        nats: config.nats.clone(),
        instance: format!("deployer-{}", uuid::Uuid::now_v7()),
        crashed: CancellationToken::new(),
        tasks: platform.tasks.clone(),
        sagas: Default::default(),
        leases: Default::default(),
        metrics: Default::default(),
    });
    deployer.metrics.register(&platform.metrics);
    jobs::start_background(&deployer, &platform).await?;
    let service = DeployerServiceServer::new(grpc::DeployerGrpc(deployer.clone()));
    let routes = tonic::service::Routes::new(service);
    let (addr, handle) = platform.serve_grpc(config.listen.deployer, routes).await?;
    Ok(Started { running: Running::new("deployer", addr, handle), deployer })
}
