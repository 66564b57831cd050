//! `deployer`: groups, environments and the canary deploy pipeline as durable JetStream work.

use ramen_service::{Platform, Running, serve_grpc};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

pub async fn start(platform: Platform) -> Result<Running, StartError> {
    let routes = tonic::service::Routes::default();
    let (addr, handle) =
        serve_grpc(platform.config.listen.deployer, routes, platform.shutdown.token()).await?;
    Ok(Running::new("deployer", addr, handle))
}
