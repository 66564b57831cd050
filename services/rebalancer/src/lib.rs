//! `rebalancer`: load cells, rebalancing the load balancers, the scheduler and the autoscaler.

use ramen_service::{Platform, Running, serve_grpc};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let routes = tonic::service::Routes::default();
    let (addr, handle) =
        serve_grpc(platform.config.listen.rebalancer, routes, platform.shutdown.token()).await?;
    Ok(Running::new("rebalancer", addr, handle))
}
