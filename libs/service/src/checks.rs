//! Readiness checks for each adapter (pinged by `/readyz` with a 1 s deadline).

use std::sync::Arc;
use std::time::Duration;

use ramen_blob::BlobStore;
use ramen_bus::Bus;
use ramen_lifecycle::HealthCheck;
use ramen_state::SharedState;
use ramen_store::DocumentStore;

pub struct StoreCheck(pub Arc<dyn DocumentStore>);
pub struct BlobCheck(pub Arc<dyn BlobStore>);
pub struct StateCheck(pub Arc<dyn SharedState>);
pub struct BusCheck(pub Bus);

#[async_trait::async_trait]
impl HealthCheck for StoreCheck {
    fn name(&self) -> &str {
        "store"
    }
    async fn check(&self) -> Result<(), String> {
        self.0.ping().await.map_err(|e| e.to_string())
    }
}

#[async_trait::async_trait]
impl HealthCheck for BlobCheck {
    fn name(&self) -> &str {
        "blob"
    }
    async fn check(&self) -> Result<(), String> {
        self.0.ping().await.map_err(|e| e.to_string())
    }
}

#[async_trait::async_trait]
impl HealthCheck for StateCheck {
    fn name(&self) -> &str {
        "shared_state"
    }
    async fn check(&self) -> Result<(), String> {
        // Degraded (Redis down, memory fallback) still serves: report it, stay ready.
        match self.0.ping().await {
            Ok(()) => Ok(()),
            Err(_) if self.0.is_degraded() => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[async_trait::async_trait]
impl HealthCheck for BusCheck {
    fn name(&self) -> &str {
        "nats"
    }
    async fn check(&self) -> Result<(), String> {
        self.0.ping(Duration::from_millis(900)).await.map_err(|e| e.to_string())
    }
}
