//! gRPC clients to the services, connected lazily (the gateway starts before or without them;
//! a call to a service that is down answers 503) over `ramen-clients`' signed channel: every
//! call carries the caller's ticket (the user this gateway authenticated, with the grants auth
//! answered for the request), the request id and the W3C `traceparent`.

use std::sync::Arc;

use ramen_access::{TicketKeys, audience};
use ramen_clients::{Signed, connect_lazy};
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use ramen_proto::rebalancer::v1::rebalancer_service_client::RebalancerServiceClient;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;

use crate::settings::Settings;

/// Who a gRPC call is made for: the signed-in user with their grants, or anonymous on public
/// routes (login). One type for every service.
pub use ramen_access::Caller;

#[derive(Clone)]
pub struct Clients {
    pub auth: AuthServiceClient<Signed>,
    pub deployer: DeployerServiceClient<Signed>,
    pub zone: ZoneServiceClient<Signed>,
    pub rebalancer: RebalancerServiceClient<Signed>,
    pub channels: Channels,
}

/// The raw signed channels (the MCP edge builds its own clients on them).
#[derive(Clone)]
pub struct Channels {
    pub deployer: Signed,
    pub zone: Signed,
}

/// A lazily connected channel to the service `audience` at `url`, its tickets signed for that
/// service: calls made while the service is down answer UNAVAILABLE.
pub fn channel(
    url: &str,
    timeout: std::time::Duration,
    keys: Arc<TicketKeys>,
    audience: &str,
) -> Result<Signed, String> {
    connect_lazy(url, Some(timeout), keys, audience).map_err(|e| e.message)
}

impl Clients {
    pub fn connect_lazy(settings: &Settings, keys: Arc<TicketKeys>) -> Result<Self, String> {
        let t = settings.grpc_timeout;
        let deployer = channel(&settings.deployer_endpoint, t, keys.clone(), audience::DEPLOYER)?;
        let zone =
            channel(&settings.zone_manager_endpoint, t, keys.clone(), audience::ZONE_MANAGER)?;
        let auth = channel(&settings.auth_endpoint, t, keys.clone(), audience::AUTH)?;
        let rebalancer = channel(&settings.rebalancer_endpoint, t, keys, audience::REBALANCER)?;
        Ok(Self {
            auth: AuthServiceClient::new(auth),
            deployer: DeployerServiceClient::new(deployer.clone()),
            zone: ZoneServiceClient::new(zone.clone()),
            rebalancer: RebalancerServiceClient::new(rebalancer),
            channels: Channels { deployer, zone },
        })
    }
}
