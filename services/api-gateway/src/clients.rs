//! gRPC clients to the services, connected lazily (the gateway starts before or without them;
//! a call to a service that is down answers 503), and the metadata every call carries: the
//! acting user (`x-ramen-actor`), the request id and the W3C `traceparent`.

use std::time::Duration;

use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use ramen_proto::metadata;
use ramen_proto::rebalancer::v1::rebalancer_service_client::RebalancerServiceClient;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use crate::settings::Settings;

#[derive(Clone)]
pub struct Clients {
    pub auth: AuthServiceClient<Channel>,
    pub deployer: DeployerServiceClient<Channel>,
    pub zone: ZoneServiceClient<Channel>,
    pub rebalancer: RebalancerServiceClient<Channel>,
}

/// A lazily connected channel: calls made while the service is down answer UNAVAILABLE.
pub fn channel(url: &str, timeout: Duration) -> Result<Channel, String> {
    let endpoint =
        Endpoint::from_shared(url.to_owned()).map_err(|e| format!("endpoint `{url}`: {e}"))?;
    Ok(endpoint.connect_timeout(Duration::from_secs(2)).timeout(timeout).connect_lazy())
}

impl Clients {
    pub fn connect_lazy(settings: &Settings) -> Result<Self, String> {
        let t = settings.grpc_timeout;
        Ok(Self {
            auth: AuthServiceClient::new(channel(&settings.auth_endpoint, t)?),
            deployer: DeployerServiceClient::new(channel(&settings.deployer_endpoint, t)?),
            zone: ZoneServiceClient::new(channel(&settings.zone_manager_endpoint, t)?),
            rebalancer: RebalancerServiceClient::new(channel(&settings.rebalancer_endpoint, t)?),
        })
    }
}

/// Who a gRPC call is made for. `actor` is empty on public routes (login).
#[derive(Clone, Debug, Default)]
pub struct CallCtx {
    pub actor: String,
    pub request_id: String,
}

impl CallCtx {
    /// `message` as a request carrying this context's metadata.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        let metadata = request.metadata_mut();
        let mut put = |key: &'static str, value: &str| {
            if let Ok(value) = MetadataValue::try_from(value)
                && !value.is_empty()
            {
                metadata.insert(key, value);
            }
        };
        put(metadata::ACTOR, &self.actor);
        put(metadata::REQUEST_ID, &self.request_id);
        if let Some(traceparent) = ramen_telemetry::current_traceparent() {
            put("traceparent", &traceparent);
        }
        request
    }
}
