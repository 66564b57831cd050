//! What the deployer drives, injected at start so the pipeline runs against the real services
//! or in-memory fakes (`ramen-clients`' `test-util`): auth, the zone-manager, the worker
//! nodes' admin API and the canary smoke test, each an `Arc<dyn …>`; the bus for events.
//! [`Auth`], [`Zones`] and [`Nodes`] are thin adapters that put the deployer's words and errors
//! on those clients.

pub mod auth;
pub mod events;
pub mod nodes;
pub mod smoke;
pub mod zones;

use std::sync::Arc;

use ramen_access::TicketKeys;
use ramen_clients::{AuthClient, GrpcAuth, GrpcNode, GrpcZones, NodeClient, ZoneClient};
use ramen_config::{Config, ServiceName};

pub use auth::{Audit, Auth};
pub use events::Events;
pub use nodes::Nodes;
pub use smoke::{HttpSmoke, Smoke};
pub use zones::Zones;

/// The deployer's ports. [`Ports::grpc`] is the deployment's; tests swap any of them.
#[derive(Clone)]
pub struct Ports {
    pub auth: Arc<dyn AuthClient>,
    pub zones: Arc<dyn ZoneClient>,
    pub nodes: Arc<dyn NodeClient>,
    pub smoke: Arc<dyn Smoke>,
}

impl Ports {
    /// Auth and the zone-manager at their configured endpoints, nodes at the addresses the
    /// zone-manager reports, the smoke test over MCP streamable HTTP.
    pub fn grpc(
        config: &Config,
        tickets: Arc<TicketKeys>,
    ) -> Result<Self, ramen_clients::UpstreamError> {
        Ok(Self {
            auth: Arc::new(GrpcAuth::connect_lazy(
                &config.endpoint(ServiceName::Auth),
                tickets.clone(),
            )?),
            zones: Arc::new(GrpcZones::connect_lazy(
                &config.endpoint(ServiceName::ZoneManager),
                tickets.clone(),
            )?),
            nodes: Arc::new(GrpcNode::new(tickets)),
            smoke: Arc::new(HttpSmoke),
        })
    }
}
