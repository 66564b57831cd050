//! `zone-manager`: zones, placements, the zone providers, scaling, IP rules, teardown.

use ramen_service::{Platform, Running, serve_grpc};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let routes = tonic::service::Routes::default();
    let (addr, handle) =
        serve_grpc(platform.config.listen.zone_manager, routes, platform.shutdown.token()).await?;
    Ok(Running::new("zone-manager", addr, handle))
}
