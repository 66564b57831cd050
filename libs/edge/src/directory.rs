//! Where an environment is served: its zones, each zone's IP rules and ready workers; and
//! what is blocked on it, so the edge can refuse a blocked tool of a stateless request by its
//! `Mcp-Name` header before any node sees it.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipnet::IpNet;
use parking_lot::Mutex;
use ramen_access::Caller;
use ramen_clients::{DeployerClient, ZoneClient};
use ramen_proto::deployer::v1::GetEnvironmentRequest;
use ramen_proto::zone::v1::{Endpoint, ListEndpointsRequest, ZoneEndpoints};

use crate::access::EdgeAuth;

#[derive(Clone, Debug, Default)]
pub struct Route {
    pub zones: Vec<ZoneRoute>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZoneRoute {
    pub zone: String,
    /// Empty allows every source.
    pub ip_allow: Vec<IpNet>,
    /// Rules the zone-manager sent that are not CIDRs. A zone with any is served to no one:
    /// dropping them could leave an empty list, which allows everyone.
    pub unparsable_ip_rules: Vec<String>,
    /// Where new sessions and stateless calls go.
    pub workers: Vec<WorkerRoute>,
    /// The zone's other live workers, which take nothing new but still answer the sessions
    /// they hold: draining ones, and a canary that stood in for a restarting stable track.
    pub hosting_only: Vec<WorkerRoute>,
}

/// Whether a zone takes a client's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Allowed,
    /// The client's address is outside the zone's IP rules.
    Forbidden,
    /// The zone's IP rules cannot be read: it serves no one.
    Unreadable,
}

impl ZoneRoute {
    /// Whether `client` (already canonical: see `ramen_client_addr`) may call this zone.
    pub fn admits(&self, client: IpAddr) -> Admission {
        if !self.unparsable_ip_rules.is_empty() {
            Admission::Unreadable
        } else if self.ip_allow.is_empty() || self.ip_allow.iter().any(|n| n.contains(&client)) {
            Admission::Allowed
        } else {
            Admission::Forbidden
        }
    }

    /// The worker at `address`, when it is this zone's: whether a session it holds is.
    pub fn hosting(&self, address: &str) -> Option<&WorkerRoute> {
        self.workers.iter().chain(&self.hosting_only).find(|w| w.address == address)
    }
}

/// The edge's routes from the zone-manager's `ListEndpoints` answer (asked with
/// `ready_only: false`, so the workers that only finish their sessions come too).
pub fn zone_routes(zones: Vec<ZoneEndpoints>) -> Vec<ZoneRoute> {
    zones
        .into_iter()
        .map(|z| {
            let (serving, others): (Vec<_>, Vec<_>) =
                z.endpoints.into_iter().partition(|e| e.serving);
            let (mut ip_allow, mut unparsable_ip_rules) = (Vec::new(), Vec::new());
            for rule in &z.ip_rules {
                match ramen_client_addr::parse_net(rule) {
                    Some(net) => ip_allow.push(net),
                    None => unparsable_ip_rules.push(rule.clone()),
                }
            }
            if !unparsable_ip_rules.is_empty() {
                tracing::error!(zone = %z.zone, rules = ?unparsable_ip_rules, "a zone's IP rules are not CIDRs; the edge serves the zone to no one until they are fixed");
            }
            ZoneRoute {
                zone: z.zone,
                ip_allow,
                unparsable_ip_rules,
                workers: serving.into_iter().map(WorkerRoute::from).collect(),
                hosting_only: others.into_iter().map(WorkerRoute::from).collect(),
            }
        })
        .collect()
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerRoute {
    pub id: String,
    /// `host:port` of the worker's MCP endpoint: who the worker is (sealed into its
    /// sessions) and how to reach it from anywhere.
    pub address: String,
    /// `@name` of the worker's abstract Unix socket, when it is on the edge's host (a local
    /// zone's): how to reach it for less. The edge connects there first and over TCP when
    /// that fails (the edge runs elsewhere, or the node has restarted since).
    pub local: Option<String>,
    pub weight: u32,
}

impl From<Endpoint> for WorkerRoute {
    fn from(e: Endpoint) -> Self {
        let local = (!e.local_address.is_empty()).then_some(e.local_address);
        Self { id: e.worker_id, address: e.address, local, weight: e.weight }
    }
}

/// An environment's blocked list: package names (`weather`) and tool names
/// (`weather.forecast`), as the deployer keeps them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Blocked {
    entries: HashSet<String>,
}

impl Blocked {
    pub fn new(entries: impl IntoIterator<Item = String>) -> Self {
        Self { entries: entries.into_iter().map(|e| e.trim().to_owned()).collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a tool (or prompt) name is blocked: itself, or the package its
    /// `<package>.` prefix names (how the nodes namespace names by default).
    pub fn covers(&self, name: &str) -> bool {
        self.entries.contains(name)
            || name.split_once('.').is_some_and(|(package, _)| self.entries.contains(package))
    }

    /// Whether the `<package>.` prefix of a name is blocked (prompts are blocked by package).
    pub fn covers_package_of(&self, name: &str) -> bool {
        name.split_once('.').is_some_and(|(package, _)| self.entries.contains(package))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("no environment {environment:?} in group {group:?}")]
    NotFound { group: String, environment: String },
    #[error("the control plane cannot be reached: {0}")]
    Unavailable(String),
}

/// What the edge needs of an environment to serve one request, as one lookup found it.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    pub route: Arc<Route>,
    pub blocked: Arc<Blocked>,
    pub auth: Arc<EdgeAuth>,
}

#[async_trait::async_trait]
pub trait Directory: Send + Sync + 'static {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError>;

    /// The environment's route, blocked list and auth together: what every request needs, in
    /// one lookup (and from one answer of the control plane). The default is for a directory
    /// that knows routes only: nothing blocked, and callers authenticate with MCP keys (the
    /// nodes enforce both themselves all the same).
    async fn environment(
        &self,
        group: &str,
        environment: &str,
    ) -> Result<Environment, DirectoryError> {
        let route = self.route(group, environment).await?;
        Ok(Environment { route, ..Environment::default() })
    }

    /// Forgets what is cached for the environment (a worker did not answer).
    fn invalidate(&self, _group: &str, _environment: &str) {}

    /// The route asked again of the control plane, after no worker of the cached one took a
    /// request (its workers may have restarted since). A directory that caches answers with
    /// one fetched a moment ago, so the requests that all found the same stale route fetch it
    /// about once.
    async fn refetch(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        self.invalidate(group, environment);
        self.route(group, environment).await
    }
}

/// How recent a cached answer [`Directory::refetch`] takes instead of fetching again.
const REFETCH_AFTER: Duration = Duration::from_millis(250);

/// Maps keyed by group, then environment: looked up by `&str` on every request without
/// building a key, and hashed with foldhash rather than SipHash (the names come from the
/// control plane or select an environment that must already exist; foldhash is seeded at
/// random all the same).
type ByEnvironment<V> = HashMap<String, HashMap<String, V, FoldHash>, FoldHash>;
type FoldHash = foldhash::fast::RandomState;

fn lookup<'m, V>(map: &'m ByEnvironment<V>, group: &str, environment: &str) -> Option<&'m V> {
    map.get(group)?.get(environment)
}

fn entry_mut<'m, V: Default>(
    map: &'m mut ByEnvironment<V>,
    group: &str,
    environment: &str,
) -> &'m mut V {
    map.entry(group.to_owned()).or_default().entry(environment.to_owned()).or_default()
}

/// A fixed table (tests, and single-node setups without a control plane).
#[derive(Default)]
pub struct StaticDirectory {
    table: Mutex<ByEnvironment<StaticEntry>>,
}

/// What [`StaticDirectory`] was told of one environment; it exists once it has a route.
#[derive(Default)]
struct StaticEntry {
    route: Option<Arc<Route>>,
    blocked: Arc<Blocked>,
    auth: Arc<EdgeAuth>,
}

impl StaticDirectory {
    pub fn set(&self, group: &str, environment: &str, route: Route) {
        entry_mut(&mut self.table.lock(), group, environment).route = Some(Arc::new(route));
    }

    pub fn set_blocked(&self, group: &str, environment: &str, blocked: Blocked) {
        entry_mut(&mut self.table.lock(), group, environment).blocked = Arc::new(blocked);
    }

    pub fn set_auth(&self, group: &str, environment: &str, auth: EdgeAuth) {
        entry_mut(&mut self.table.lock(), group, environment).auth = Arc::new(auth);
    }
}

fn not_found(group: &str, environment: &str) -> DirectoryError {
    DirectoryError::NotFound { group: group.to_owned(), environment: environment.to_owned() }
}

#[async_trait::async_trait]
impl Directory for StaticDirectory {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        let table = self.table.lock();
        let route = lookup(&table, group, environment).and_then(|e| e.route.clone());
        route.ok_or_else(|| not_found(group, environment))
    }

    async fn environment(
        &self,
        group: &str,
        environment: &str,
    ) -> Result<Environment, DirectoryError> {
        let table = self.table.lock();
        let entry = lookup(&table, group, environment);
        let found = entry.and_then(|e| {
            let route = e.route.clone()?;
            Some(Environment { route, blocked: e.blocked.clone(), auth: e.auth.clone() })
        });
        found.ok_or_else(|| not_found(group, environment))
    }
}

/// Asks the deployer (the environment's zones) and the zone-manager (ready workers, IP rules,
/// weights), caching each answer briefly so the request path rarely waits on the control
/// plane.
pub struct GrpcDirectory {
    deployer: Arc<dyn DeployerClient>,
    zones: Arc<dyn ZoneClient>,
    ttl: Duration,
    cache: Mutex<ByEnvironment<Cached>>,
}

/// One environment's answer, kept for the TTL: its route, its blocked list and its auth (all
/// from the same `GetEnvironment`, so a blocked-list or auth edit reaches the edge as fast as a
/// zone change does).
struct Cached {
    at: Instant,
    environment: Environment,
}

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

    async fn fetch(&self, group: &str, environment: &str) -> Result<Environment, DirectoryError> {
        let request =
            GetEnvironmentRequest { group: group.to_owned(), name: environment.to_owned() };
        let env = match self.deployer.get_environment(&edge(), request).await {
            Ok(env) => env,
            Err(error) if error.is_not_found() => return Err(not_found(group, environment)),
            Err(error) => return Err(DirectoryError::Unavailable(error.message)),
        };
        let blocked = Blocked::new(env.blocked.iter().cloned());
        let auth = EdgeAuth::from_wire(env.auth.as_ref());
        let request = ListEndpointsRequest {
            group: group.to_owned(),
            zones: env.zones.clone(),
            ready_only: false,
            page: None,
        };
        let endpoints = self
            .zones
            .list_endpoints(&edge(), request)
            .await
            .map_err(|error| DirectoryError::Unavailable(error.message))?;
        let zones = zone_routes(endpoints.zones);
        Ok(Environment {
            route: Arc::new(Route { zones }),
            blocked: Arc::new(blocked),
            auth: Arc::new(auth),
        })
    }

    /// The cached answer younger than `max_age`.
    fn cached(&self, group: &str, environment: &str, max_age: Duration) -> Option<Environment> {
        let cache = self.cache.lock();
        let cached = lookup(&cache, group, environment)?;
        (cached.at.elapsed() < max_age).then(|| cached.environment.clone())
    }

    async fn entry(&self, group: &str, environment: &str) -> Result<Environment, DirectoryError> {
        if let Some(environment) = self.cached(group, environment, self.ttl) {
            return Ok(environment);
        }
        let fetched = self.fetch(group, environment).await?;
        let cached = Cached { at: Instant::now(), environment: fetched.clone() };
        let mut cache = self.cache.lock();
        cache.entry(group.to_owned()).or_default().insert(environment.to_owned(), cached);
        Ok(fetched)
    }
}

#[async_trait::async_trait]
impl Directory for GrpcDirectory {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        Ok(self.entry(group, environment).await?.route)
    }

    async fn environment(
        &self,
        group: &str,
        environment: &str,
    ) -> Result<Environment, DirectoryError> {
        self.entry(group, environment).await
    }

    fn invalidate(&self, group: &str, environment: &str) {
        let mut cache = self.cache.lock();
        if let Some(environments) = cache.get_mut(group) {
            environments.remove(environment);
            if environments.is_empty() {
                cache.remove(group);
            }
        }
    }

    async fn refetch(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        if let Some(environment) = self.cached(group, environment, REFETCH_AFTER) {
            return Ok(environment.route);
        }
        self.invalidate(group, environment);
        self.route(group, environment).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_place_on_serving_workers_and_follow_the_others_sessions() {
        let endpoint = |id: &str, serving: bool| Endpoint {
            worker_id: id.into(),
            address: format!("{id}:1"),
            weight: 7,
            ready: true,
            serving,
            ..Default::default()
        };
        let zones = zone_routes(vec![ZoneEndpoints {
            zone: "a".into(),
            ip_rules: vec!["10.0.0.0/8".into()],
            endpoints: vec![endpoint("worker-canary-0", true), endpoint("worker-0", false)],
        }]);
        let zone = &zones[0];
        assert_eq!(
            zone.workers.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
            ["worker-canary-0"]
        );
        let hosting = |address| zone.hosting(address).map(|w| w.id.as_str());
        assert_eq!(
            zone.hosting_only.iter().map(|w| w.address.as_str()).collect::<Vec<_>>(),
            ["worker-0:1"]
        );
        assert_eq!(hosting("worker-0:1"), Some("worker-0"));
        assert_eq!(hosting("worker-canary-0:1"), Some("worker-canary-0"));
        assert_eq!(hosting("x:1"), None);
        assert_eq!(zone.ip_allow, ["10.0.0.0/8".parse::<IpNet>().unwrap()]);
    }

    #[test]
    fn blocked_names_and_packages() {
        let blocked = Blocked::new(["weather".to_owned(), " notes.add ".to_owned()]);
        assert!(blocked.covers("notes.add"));
        assert!(!blocked.covers("notes.divide"));
        assert!(blocked.covers("weather.forecast"), "the whole package");
        assert!(!blocked.covers("weatherly.x"));
        assert!(blocked.covers_package_of("weather.plan_trip"));
        assert!(!blocked.covers_package_of("notes.add"), "prompts are blocked by package only");
        assert!(Blocked::default().is_empty());
    }
}
