//! The load-balancer port: which targets a zone's balancer splits traffic over, and setting
//! their weights. Three adapters:
//! - [`LocalBalancer`]: the api-gateway edge's per-worker weights, through the zone-manager
//!   (`SetEdgeWeights`); targets are the placement's stable workers, measured per node.
//! - [`AwsBalancer`]: target-group weights on an ELBv2 listener's forward action; targets are
//!   the group's target groups (one per zone), measured per zone.
//! - [`GcpBalancer`]: the capacity scaler of each backend of a Compute Engine backend service;
//!   targets are the group's zonal NEGs, measured per zone.
//!
//! Weights are permille (see [`crate::weights`]). A balancer that is still reconciling answers
//! [`Applied::Reconciling`] with a note and optionally a ticket (an operation to follow); the
//! caller retries `apply` with that ticket until it answers [`Applied::Done`].

mod aws;
mod gcp;
mod local;

use std::sync::Arc;

use async_trait::async_trait;

pub use aws::{AwsBalancer, AwsSettings, GROUP_TAG, ZONE_TAG};
pub use gcp::{GcpBalancer, GcpSettings, backend_service_name, neg_name};
pub use local::LocalBalancer;

use crate::model::{Caller, Provider};

/// The zone being balanced, as the adapters need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneRef {
    pub group: String,
    pub zone: String,
    pub provider: Provider,
    /// GCP zone / AWS availability zone; empty for local.
    pub region: String,
}

/// One thing the balancer weighs, and whose load measures it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Worker id, target group ARN or NEG name: what `apply` receives back.
    pub id: String,
    pub measure: Measure,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Measure {
    /// One node (a worker) of the group's cell in `zone`.
    Node { zone: String, node: String },
    /// The whole cell of the group in `zone`.
    Cell { zone: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    Done(String),
    /// Not in effect yet; retry `apply` later, passing `ticket` back.
    Reconciling {
        note: String,
        ticket: Option<String>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LbError {
    /// Throttled, unreachable, busy: retrying later can succeed.
    #[error("{0}")]
    Transient(String),
    /// The balancer resources for the zone do not exist (or are not tagged/named for it).
    #[error("{0}")]
    NotFound(String),
    /// This deployment has no settings for that provider.
    #[error("{0}")]
    NotConfigured(String),
    /// Refused for good (invalid, denied).
    #[error("{0}")]
    Refused(String),
}

impl LbError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
}

#[async_trait]
pub trait LoadBalancer: Send + Sync {
    async fn targets(&self, zone: &ZoneRef) -> Result<Vec<Target>, LbError>;
    /// Sets `weights` (target id, permille); targets not listed keep theirs.
    async fn apply(
        &self,
        caller: &Caller,
        zone: &ZoneRef,
        weights: &[(String, u32)],
        ticket: Option<&str>,
    ) -> Result<Applied, LbError>;
}

/// The adapter of each provider.
#[derive(Clone)]
pub struct Balancers {
    pub local: Arc<dyn LoadBalancer>,
    pub aws: Arc<dyn LoadBalancer>,
    pub gcp: Arc<dyn LoadBalancer>,
}

impl Balancers {
    pub fn for_provider(&self, provider: Provider) -> &Arc<dyn LoadBalancer> {
        match provider {
            Provider::Local => &self.local,
            Provider::Aws => &self.aws,
            Provider::Gcp => &self.gcp,
        }
    }
}
