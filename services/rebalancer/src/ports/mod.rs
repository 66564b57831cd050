//! What the rebalancer needs from other services, each behind a trait so the core logic runs
//! against them or against a stand-in: the zone-manager ([`ZonePort`]), auth's audit log
//! ([`AuditPort`]) and the deployer's Config settings ([`SettingsPort`]). The `Grpc*` types are
//! the real adapters, built on `ramen-clients` (lazy signed channels, so start-up never waits
//! for another service; one table of retryable codes).

mod audit;
mod settings;
mod zone;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use ramen_clients::UpstreamError;

pub use audit::GrpcAudit;
pub use settings::GrpcSettings;
pub use zone::GrpcZones;

use crate::model::{Caller, Provider};

#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The service cannot be reached now; try again later.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    NotFound(String),
    /// The service refused the request (invalid, precondition, permission).
    #[error("{0}")]
    Refused(String),
}

impl PortError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    pub(crate) fn from_upstream(error: UpstreamError) -> Self {
        let message = error.to_string();
        match () {
            _ if error.is_retryable() => Self::Unavailable(message),
            _ if error.is_not_found() => Self::NotFound(error.message),
            _ => Self::Refused(message),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneInfo {
    pub name: String,
    pub provider: Provider,
    /// GCP zone or AWS availability zone; empty for local.
    pub region: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementInfo {
    pub group: String,
    pub zone: String,
    /// Autoscaler minimum for stable workers.
    pub worker_count: u32,
    /// Autoscaler maximum (2 × worker_count).
    pub max_workers: u32,
    /// Provisioned and not being torn down: it has (or can have) workers.
    pub active: bool,
    /// Ready workers of the stable track, as the zone-manager counts them.
    pub stable_workers: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    pub id: String,
    /// The stable track (`worker`), not the canary.
    pub stable: bool,
    pub ready: bool,
}

#[async_trait]
pub trait ZonePort: Send + Sync {
    async fn zones(&self) -> Result<Vec<ZoneInfo>, PortError>;
    async fn zone(&self, name: &str) -> Result<ZoneInfo, PortError>;
    async fn placements(&self) -> Result<Vec<PlacementInfo>, PortError>;
    async fn workers(&self, group: &str, zone: &str) -> Result<Vec<WorkerInfo>, PortError>;
    /// The local balancer: per-worker edge weights; returns every worker's effective weight.
    async fn set_edge_weights(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        weights: &[(String, u32)],
    ) -> Result<Vec<(String, u32)>, PortError>;
    /// Sets the stable track's replicas; `Ok(true)` when every worker was ready in time.
    async fn scale_stable(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        replicas: u32,
        timeout: Duration,
    ) -> Result<bool, PortError>;
}

/// One audit entry (auth's `AuditEntry` without the server-assigned fields).
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRecord {
    /// Fixed id, so a retried append is stored once.
    pub id: String,
    pub actor: String,
    pub action: String,
    pub group: String,
    pub target: String,
    pub success: bool,
    pub request_id: String,
    pub details: BTreeMap<String, String>,
}

#[async_trait]
pub trait AuditPort: Send + Sync {
    async fn append(&self, entry: AuditRecord) -> Result<(), PortError>;
}

/// The Config settings the scheduler follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerSettings {
    pub enabled: bool,
    pub interval: Duration,
}

#[async_trait]
pub trait SettingsPort: Send + Sync {
    async fn get(&self) -> Result<SchedulerSettings, PortError>;
}

impl From<UpstreamError> for PortError {
    fn from(error: UpstreamError) -> Self {
        Self::from_upstream(error)
    }
}
