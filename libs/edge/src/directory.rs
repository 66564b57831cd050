//! Where an environment is served: its zones, each zone's IP rules and ready workers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipnet::IpNet;
use parking_lot::Mutex;
use ramen_access::Caller;
use ramen_clients::{DeployerClient, ZoneClient};
use ramen_proto::deployer::v1::GetEnvironmentRequest;
use ramen_proto::zone::v1::ListEndpointsRequest;

#[derive(Clone, Debug, Default)]
pub struct Route {
    pub zones: Vec<ZoneRoute>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZoneRoute {
    pub zone: String,
    /// Empty allows every source.
    pub ip_allow: Vec<IpNet>,
    pub workers: Vec<WorkerRoute>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerRoute {
    pub id: String,
    /// `host:port` of the worker's MCP endpoint.
    pub address: String,
    pub weight: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("no environment {environment:?} in group {group:?}")]
    NotFound { group: String, environment: String },
    #[error("the control plane cannot be reached: {0}")]
    Unavailable(String),
}

#[async_trait::async_trait]
pub trait Directory: Send + Sync + 'static {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError>;

    /// Forgets what is cached for the environment (a worker did not answer).
    fn invalidate(&self, _group: &str, _environment: &str) {}
}

/// A fixed table (tests, and single-node setups without a control plane).
#[derive(Default)]
pub struct StaticDirectory {
    routes: Mutex<HashMap<(String, String), Arc<Route>>>,
}

impl StaticDirectory {
    pub fn set(&self, group: &str, environment: &str, route: Route) {
        self.routes.lock().insert((group.to_owned(), environment.to_owned()), Arc::new(route));
    }
}

#[async_trait::async_trait]
impl Directory for StaticDirectory {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        self.routes.lock().get(&(group.to_owned(), environment.to_owned())).cloned().ok_or_else(
            || DirectoryError::NotFound {
                group: group.to_owned(),
                environment: environment.to_owned(),
            },
        )
    }
}

/// Asks the deployer (the environment's zones) and the zone-manager (ready workers, IP rules,
/// weights), caching each answer briefly so the request path rarely waits on the control
/// plane.
pub struct GrpcDirectory {
    deployer: Arc<dyn DeployerClient>,
    zones: Arc<dyn ZoneClient>,
    ttl: Duration,
    cache: Mutex<HashMap<EnvironmentKey, (Instant, Arc<Route>)>>,
}

/// `(group, environment)`.
type EnvironmentKey = (String, String);

/// The edge's lookups are made on its own behalf (the MCP client is not a ramen user).
fn edge() -> Caller {
    Caller::acting_as(ramen_proto::metadata::ACTOR_EDGE)
}

impl GrpcDirectory {
    pub fn new(
        deployer: Arc<dyn DeployerClient>,
        zones: Arc<dyn ZoneClient>,
        ttl: Duration,
    ) -> Self {
        Self { deployer, zones, ttl, cache: Mutex::default() }
    }

    async fn fetch(&self, group: &str, environment: &str) -> Result<Route, DirectoryError> {
        let request =
            GetEnvironmentRequest { group: group.to_owned(), name: environment.to_owned() };
        let env = match self.deployer.get_environment(&edge(), request).await {
            Ok(env) => env,
            Err(error) if error.is_not_found() => {
                return Err(DirectoryError::NotFound {
                    group: group.to_owned(),
                    environment: environment.to_owned(),
                });
            }
            Err(error) => return Err(DirectoryError::Unavailable(error.message)),
        };
        let request = ListEndpointsRequest {
            group: group.to_owned(),
            zones: env.zones.clone(),
            ready_only: true,
            page: None,
        };
        let endpoints = self
            .zones
            .list_endpoints(&edge(), request)
            .await
            .map_err(|error| DirectoryError::Unavailable(error.message))?;
        let zones = endpoints
            .zones
            .into_iter()
            .map(|z| ZoneRoute {
                zone: z.zone,
                ip_allow: z.ip_rules.iter().filter_map(|r| r.parse().ok()).collect(),
                workers: z
                    .endpoints
                    .into_iter()
                    .filter(|e| e.ready)
                    .map(|e| WorkerRoute { id: e.worker_id, address: e.address, weight: e.weight })
                    .collect(),
            })
            .collect();
        Ok(Route { zones })
    }
}

#[async_trait::async_trait]
impl Directory for GrpcDirectory {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        let key = (group.to_owned(), environment.to_owned());
        if let Some((at, route)) = self.cache.lock().get(&key)
            && at.elapsed() < self.ttl
        {
            return Ok(route.clone());
        }
        let route = Arc::new(self.fetch(group, environment).await?);
        self.cache.lock().insert(key, (Instant::now(), route.clone()));
        Ok(route)
    }

    fn invalidate(&self, group: &str, environment: &str) {
        self.cache.lock().remove(&(group.to_owned(), environment.to_owned()));
    }
}
