use std::net::SocketAddr;
use std::sync::Arc;

use ramen_access::TicketKeys;
use ramen_blob::BlobStore;
use ramen_bus::Bus;
use ramen_config::Config;
use ramen_lifecycle::{Health, Shutdown, TaskCenter, admin_router, serve_http};
use ramen_state::SharedState;
use ramen_store::{DocumentStore, StoreConfig};
use ramen_telemetry::Metrics;

use crate::checks::{BlobCheck, BusCheck, StateCheck, StoreCheck};

#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("document store: {0}")]
    Store(#[from] ramen_store::StoreError),
    #[error("blob store: {0}")]
    Blob(#[from] ramen_blob::BlobError),
    #[error("shared state: {0}")]
    State(#[from] ramen_state::StateError),
    #[error("NATS at {url}: {source}")]
    Bus { url: String, source: ramen_bus::BusError },
    #[error("RAMEN_NATS_CREDS: {0}")]
    BusCredentials(#[from] ramen_bus::auth::AuthError),
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

/// The adapters and lifecycle of one process. In `ramen up` every service shares one
/// platform (one embedded store, one bus connection); `ramen serve <svc>` opens its own.
#[derive(Clone)]
pub struct Platform {
    pub config: Arc<Config>,
    pub metrics: Metrics,
    pub health: Health,
    pub shutdown: Shutdown,
    pub tasks: TaskCenter,
    pub bus: Bus,
    pub store: Arc<dyn DocumentStore>,
    pub blob: Arc<dyn BlobStore>,
    pub state: Arc<dyn SharedState>,
    /// Signs the tickets of this process's calls to other services (each for the audience it
    /// calls) and verifies the tickets of calls made to it (keys derived from
    /// `RAMEN_JWT_SECRET`).
    pub tickets: Arc<TicketKeys>,
}

impl Platform {
    /// Opens every adapter the configuration names (MongoDB or the embedded store, S3 or a
    /// local directory, Redis or memory) and the bus at `nats_url`, and registers each with
    /// readiness.
    pub async fn open(
        config: Config,
        nats_url: &str,
        shutdown: Shutdown,
    ) -> Result<Self, PlatformError> {
        ramen_bus::set_traceparent_source(ramen_telemetry::current_traceparent);
        let store_config = StoreConfig::select(
            config.mongo.uri.expose(),
            &config.mongo.db,
            config.data_dir.join("store"),
        );
        let store = ramen_store::open(&store_config).await?;
        let blob = ramen_blob::open(&config).await?;
        let state = ramen_state::open(&config.redis).await?;
        let credentials = bus_credentials(&config)?;
        let bus = Bus::connect_as(nats_url, "ramen", credentials.as_ref())
            .await
            .map_err(|source| PlatformError::Bus { url: nats_url.to_owned(), source })?;
        let health = Health::default();
        health.add(StoreCheck(store.clone()));
        health.add(BlobCheck(blob.clone()));
        health.add(StateCheck(state.clone()));
        health.add(BusCheck(bus.clone()));
        let tasks = TaskCenter::new(&shutdown.token());
        let tickets = Arc::new(ticket_keys(&config));
        Ok(Self {
            config: Arc::new(config),
            metrics: Metrics::default(),
            health,
            shutdown,
            tasks,
            bus,
            store,
            blob,
            state,
            tickets,
        })
    }

    /// Serves gRPC `routes` on `addr` until shutdown, every call's caller ticket verified as
    /// meant for `audience` (the service's name, `ramen_access::audience`).
    pub async fn serve_grpc(
        &self,
        addr: SocketAddr,
        routes: tonic::service::Routes,
        audience: &str,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        crate::serve_grpc(addr, routes, self.shutdown.token(), &self.tickets, audience).await
    }

    /// Serves `/healthz`, `/readyz` and `/metrics` on the configured admin address.
    pub async fn serve_admin(
        &self,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), PlatformError> {
        let router = admin_router(self.health.clone(), self.metrics.clone());
        Ok(serve_http(self.config.listen.admin, router, self.shutdown.token()).await?)
    }
}

/// This process's NATS user (`nats.credentials`), when it has one.
pub fn bus_credentials(
    config: &Config,
) -> Result<Option<ramen_bus::auth::Credentials>, ramen_bus::auth::AuthError> {
    let value = config.nats.credentials.expose();
    if value.is_empty() {
        return Ok(None);
    }
    ramen_bus::auth::Credentials::load(value).map(Some)
}

/// The stream and bucket names the bus permission tables are written for.
pub fn bus_names(nats: &ramen_config::NatsConfig) -> ramen_bus::auth::BusNames {
    ramen_bus::auth::BusNames {
        jobs_stream: nats.stream.clone(),
        dlq_stream: nats.dlq_stream.clone(),
        events_stream: nats.events_stream.clone(),
        job_locks_bucket: nats.kv_bucket.clone(),
    }
}

/// The caller-ticket keys of a process with this configuration.
pub fn ticket_keys(config: &Config) -> TicketKeys {
    TicketKeys::from_secrets(
        config.auth.jwt_secret.expose(),
        config.auth.jwt_previous_secret.expose(),
    )
}
