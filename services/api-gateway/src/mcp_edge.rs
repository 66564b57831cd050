//! The MCP edge (`ramen-edge`) as the gateway mounts it at `/mcp/{group}/{environment}`,
//! outside the route table: its callers present MCP keys, which the worker nodes check.
//!
//! - Routing comes from the deployer (the environment's zones) and the zone-manager (ready
//!   workers, weights, IP rules), cached for [`ROUTE_TTL`]: short, because a local worker gets
//!   new ports when it restarts (a stale address also invalidates the entry at once).
//! - Session ids are sealed with a key derived from `auth.secrets_key`, which every gateway
//!   replica shares, so any replica can route any session.
//! - The client address comes from `gateway.trusted_proxies` (the cloud load balancer) like
//!   the REST API's; the edge passes it on in `X-Forwarded-For`, which the nodes believe from
//!   the addresses in `zone.trusted_proxies`.
//! - MCP keys are checked here against auth's (`KeyBook`: fresh for under a second, asked once
//!   more for a key not seen yet), and again by the node; the keys let through are reported to
//!   auth every `key_use_report_every` ("last used").

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use ramen_edge::{Edge, EdgeRoute, EdgeSettings, GrpcDirectory, KeyBook, SessionSealer};
use ramen_lifecycle::{Answer, FastRoute};

use crate::clients::channel;
use crate::request_id;
use crate::settings::Settings;

/// How long a resolved route is reused.
pub const ROUTE_TTL: Duration = Duration::from_secs(2);
/// Bound on one routing lookup: a client's request waits on it.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

pub fn edge(
    settings: &Settings,
    auth: &ramen_config::AuthConfig,
    tickets: Arc<ramen_access::TicketKeys>,
    tasks: &ramen_lifecycle::TaskCenter,
) -> Result<Arc<Edge>, String> {
    let key = ramen_config::decode_secrets_key(&auth.secrets_key).map_err(|e| e.to_string())?;
    let sealer = SessionSealer::from_secret(&key);
    use ramen_access::audience::{AUTH, DEPLOYER, ZONE_MANAGER};
    let deployer = channel(&settings.deployer_endpoint, LOOKUP_TIMEOUT, tickets.clone(), DEPLOYER)?;
    let zones =
        channel(&settings.zone_manager_endpoint, LOOKUP_TIMEOUT, tickets.clone(), ZONE_MANAGER)?;
    let keys = channel(&settings.auth_endpoint, LOOKUP_TIMEOUT, tickets, AUTH)?;
    let keys = Arc::new(KeyBook::new(Arc::new(ramen_clients::GrpcAuth::new(keys))));
    keys.spawn_use_reports(tasks, settings.key_use_report_every);
    let directory = GrpcDirectory::new(
        Arc::new(ramen_clients::GrpcDeployer::new(deployer)),
        Arc::new(ramen_clients::GrpcZones::new(zones)),
        ROUTE_TTL,
    );
    let edge_settings =
        EdgeSettings { trusted_proxies: settings.trusted_proxies.clone(), ..Default::default() };
    let edge = Edge::new(Arc::new(directory), sealer, edge_settings).with_keys(keys);
    Ok(Arc::new(edge))
}

/// The edge's MCP requests, answered ahead of the gateway's router ([`EdgeRoute`]) with the
/// request id and span that every gateway answer has ([`request_id::layer`]). The router still
/// serves the same paths, for whatever this declines.
pub struct McpRoute(EdgeRoute);

impl McpRoute {
    pub fn new(edge: Arc<Edge>) -> Self {
        Self(EdgeRoute::new(edge))
    }
}

impl FastRoute for McpRoute {
    fn route(&self, mut request: Request<Body>) -> Result<Answer, Request<Body>> {
        if !EdgeRoute::takes(&request) {
            return Err(request);
        }
        let begun = request_id::begin(&mut request);
        let answer = self.0.route(request)?;
        Ok(Box::pin(begun.answer(answer)))
    }
}
