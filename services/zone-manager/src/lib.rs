//! `zone-manager`: zones, placements (group × zone), the zone providers (local processes, and
//! Kubernetes for GCP/AWS zones, behind one [`provider::ZoneProvider`] port), worker counts
//! and sizes, IP rules, packages per zone, the local edge's endpoints and weights, and teardown
//! as a resumable saga. See `docs/architecture.md` ("Zone manager").

pub mod api;
pub mod error;
pub mod events;
pub mod manager;
pub mod model;
pub mod provider;
pub mod store;
pub mod teardown;
pub mod validate;

use std::sync::Arc;

use ramen_config::{Config, ServiceName};
use ramen_proto::zone::v1::zone_service_server::ZoneServiceServer;
use ramen_service::{Platform, Running};

use crate::manager::{Settings, ZoneManager};
use crate::model::ProviderKind;
use crate::provider::Providers;
use crate::provider::kubernetes::{KubeSettings, KubernetesProvider};
use crate::provider::local::{LocalProvider, LocalSettings, NodeAdmin};
use crate::provider::node_bus::NodeBus;
use ramen_clients::{AuthClient, GrpcAuth};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
    #[error("invalid configuration `{key}`: {reason}")]
    Config { key: &'static str, reason: String },
    #[error("document store: {0}")]
    Store(#[from] ramen_store::StoreError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("auth client: {0}")]
    Auth(#[from] ramen_clients::UpstreamError),
    #[error("recovering placements: {0}")]
    Recover(#[from] error::Error),
}

/// The running service and its manager (tests and `ramen up` reach the manager directly).
pub struct Started {
    pub running: Running,
    pub manager: Arc<ZoneManager>,
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let auth = GrpcAuth::connect_lazy(
        &platform.config.endpoint(ServiceName::Auth),
        platform.tickets.clone(),
    )?;
    Ok(start_with(platform, Arc::new(auth)).await?.running)
}

/// Starts the service with `auth` as its auth port: opens the collections, ensures the event
/// stream, brings back the workers of existing placements and resumes unfinished teardowns,
/// then serves `ZoneService`.
pub async fn start_with(
    platform: Platform,
    auth: Arc<dyn AuthClient>,
) -> Result<Started, StartError> {
    let clouds = Clouds::from_config(&platform.config);
    start_with_clouds(platform, auth, clouds).await
}

/// The cloud adapters of the Kubernetes providers' zones.
#[derive(Clone, Default)]
pub struct Clouds {
    pub aws: Option<Arc<dyn ramen_cloud::ZoneCloud>>,
    pub gcp: Option<Arc<dyn ramen_cloud::ZoneCloud>>,
}

impl Clouds {
    /// AWS through the standard credential chain, at `kubernetes.aws_endpoint` when set;
    /// GCP through Application Default Credentials, at `kubernetes.gcp_endpoint` when set.
    pub fn from_config(config: &Config) -> Self {
        let aws = ramen_cloud::aws::AwsCloudSettings {
            endpoint: config.kubernetes.aws_endpoint.clone(),
            bucket: config.s3.bucket.clone(),
            ..Default::default()
        };
        let gcp = ramen_cloud::gcp::GcpCloudSettings {
            endpoint: config.kubernetes.gcp_endpoint.clone(),
            anonymous: config.kubernetes.gcp_anonymous,
            ..Default::default()
        };
        Self {
            aws: Some(Arc::new(ramen_cloud::aws::AwsCloud::new(aws))),
            gcp: Some(Arc::new(ramen_cloud::gcp::GcpCloud::new(gcp))),
        }
    }

    fn for_kind(&self, kind: ProviderKind) -> Option<Arc<dyn ramen_cloud::ZoneCloud>> {
        match kind {
            ProviderKind::Aws => self.aws.clone(),
            ProviderKind::Gcp => self.gcp.clone(),
            ProviderKind::Local => None,
        }
    }
}

/// [`start_with`], with the cloud adapters given (tests: a stand-in's static keys).
pub async fn start_with_clouds(
    platform: Platform,
    auth: Arc<dyn AuthClient>,
    clouds: Clouds,
) -> Result<Started, StartError> {
    let config = &platform.config;
    let settings = settings(config)?;
    let db = store::Db::open(platform.store.clone()).await?;
    ramen_service::ensure_event_stream(&platform.bus, &config.nats).await?;
    let (worker_events, worker_reports) = tokio::sync::mpsc::unbounded_channel();
    let nodes = NodeAdmin::new(
        Arc::new(ramen_clients::GrpcNode::new(platform.tickets.clone())),
        platform.tickets.clone(),
    );
    let nats_url = nats_url(&platform);
    let node_bus = NodeBus::from_config(config)
        .map_err(|reason| StartError::Config { key: "nats.signing_key", reason })?;
    let mut kube = KubeSettings::from_config(config, nats_url.clone(), nodes.clone());
    kube.node_bus = node_bus.clone();
    let kube = Arc::new(kube);
    let mut local = LocalSettings::from_config(config, nats_url, nodes)?;
    local.node_bus = node_bus;
    let local = LocalProvider::new(local, platform.tasks.clone(), worker_events);
    let mut providers = Providers::default().with(Arc::new(local));
    // A cloud is offered when a cluster is configured for it.
    for kind in [ProviderKind::Gcp, ProviderKind::Aws] {
        if kube.serves(kind) {
            let cloud = clouds.for_kind(kind);
            providers =
                providers.with(Arc::new(KubernetesProvider::new(kind, kube.clone(), cloud)));
        }
    }
    let publisher = events::Publisher::new(platform.bus.clone());
    let manager = Arc::new(ZoneManager::new(
        db,
        providers,
        auth,
        publisher,
        settings,
        platform.tasks.clone(),
    ));
    events::spawn_worker_events(&manager, worker_reports);
    events::spawn_consumers(&manager, &platform.bus, &config.nats.events_stream).await?;
    manager.recover().await?;
    manager.spawn_retention();
    manager.spawn_route_sync();

    let routes =
        tonic::service::Routes::new(ZoneServiceServer::new(api::ZoneApi::new(manager.clone())));
    let (addr, handle) = platform
        .serve_grpc(config.listen.zone_manager, routes, ramen_access::audience::ZONE_MANAGER)
        .await?;
    Ok(Started { running: Running::new("zone-manager", addr, handle), manager })
}

fn settings(config: &Config) -> Result<Settings, StartError> {
    let zone = &config.zone;
    if zone.restart_timeout.as_secs() < 1 {
        return Err(StartError::Config {
            key: "zone.restart_timeout",
            reason: "must be at least 1s".into(),
        });
    }
    if zone.max_worker_count == 0 {
        return Err(StartError::Config {
            key: "zone.max_worker_count",
            reason: "must be at least 1".into(),
        });
    }
    validate::cidrs(&zone.trusted_proxies)
        .map_err(|e| StartError::Config { key: "zone.trusted_proxies", reason: e.to_string() })?;
    Ok(Settings {
        restart_timeout: zone.restart_timeout,
        max_worker_count: zone.max_worker_count,
        teardown_retention: zone.teardown_retention,
        route_sync_interval: config.kubernetes.route_sync_interval,
    })
}

/// Where local workers send load reports: the configured NATS (without this process's user
/// and password, if the URL has them), or the server this process is connected to
/// (`ramen up`'s own child).
fn nats_url(platform: &Platform) -> String {
    if !platform.config.nats.url.is_empty() {
        return platform.config.nats.url_without_userinfo();
    }
    let info = platform.bus.client().server_info();
    let host = match info.host.as_str() {
        "" | "0.0.0.0" | "::" | "[::]" => "127.0.0.1",
        host => host,
    };
    format!("nats://{host}:{}", info.port)
}
