//! What the rebalancer needs from other services, each behind a trait so the core logic runs
//! against them or against a stand-in: the zone-manager ([`ZonePort`]), auth's audit log
//! ([`AuditPort`]) and the deployer's Config settings ([`SettingsPort`]). The `Grpc*` types are
//! the real adapters (channels connect lazily, so start-up never waits for another service).

mod audit;
mod settings;
mod zone;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use tonic::transport::{Channel, Endpoint};

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

    pub(crate) fn from_status(service: &str, status: tonic::Status) -> Self {
        use tonic::Code;
        let message = format!("{service}: {}", status.message());
        match status.code() {
            Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Unknown
            | Code::Cancelled
            | Code::ResourceExhausted
            | Code::Aborted => Self::Unavailable(message),
            Code::NotFound => Self::NotFound(status.message().to_owned()),
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

/// A channel connected on first use, bounding every call by `timeout`.
pub(crate) fn lazy_channel(endpoint: &str, timeout: Duration) -> Result<Channel, PortError> {
    Ok(Endpoint::from_shared(endpoint.to_owned())
        .map_err(|e| PortError::Refused(format!("endpoint {endpoint:?}: {e}")))?
        .connect_timeout(Duration::from_secs(2))
        .timeout(timeout)
        .connect_lazy())
}

/// A request carrying the caller as `x-ramen-actor` / `x-request-id` metadata.
pub(crate) fn request<T>(caller: &Caller, message: T) -> tonic::Request<T> {
    use ramen_proto::metadata;
    let mut request = tonic::Request::new(message);
    if let Ok(actor) = caller.actor.parse() {
        request.metadata_mut().insert(metadata::ACTOR, actor);
    }
    if !caller.request_id.is_empty()
        && let Ok(id) = caller.request_id.parse()
    {
        request.metadata_mut().insert(metadata::REQUEST_ID, id);
    }
    request
}
