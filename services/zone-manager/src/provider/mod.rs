//! The zone provider port: what the zone-manager asks of wherever workers run. The local
//! provider (processes on this machine) is built here; the Kubernetes providers for GCP and AWS
//! implement the same trait: `ensure` creates the namespace `ramen-<group>-<zone>`, its service
//! account / IAM role and its route; `write_config` writes the zone's Secret; `rollout` patches
//! the track's Deployment (replicas, template revision) and watches it; teardown steps may
//! answer [`StepOutcome::Waiting`] while a namespace sits in `Terminating`. The cloud resources
//! around a Kubernetes zone (identity, load-balancer route, edge rule) are `ramen-cloud`'s.
//!
//! Every operation is idempotent: calling it again after a crash finishes it.

pub mod kubernetes;
pub mod local;
pub mod node_bus;
pub mod policy;
mod types;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

pub use types::*;

use crate::error::Error;
use crate::model::{PlacementRecord, ProviderKind, ZoneRecord};

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// A track has no config to run: WriteConfig has not been called for the placement.
    #[error("nothing to run for {0}: write a config (deploy) first")]
    NothingDeployed(String),
    /// The provider's backend cannot be reached now (API server, cloud API). Retryable.
    #[error("{0}")]
    Unavailable(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Failed(String),
}

impl ProviderError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// Where a placement's workers run. Implementations keep their own state (processes, cluster
/// objects); the placement record passed in is the zone-manager's source of truth for the
/// non-secret settings (size, IP rules, live policy, replicas).
#[async_trait]
pub trait ZoneProvider: Send + Sync {
    fn kind(&self) -> ProviderKind;

    /// The names of a placement's resources, before anything is created.
    fn names(&self, group: &str, zone: &ZoneRecord, namespace: &str) -> PlacementNames;

    /// Creates or completes the namespace (working directory), identity (granted exactly
    /// `grants`, the group's service-account rules for this provider) and route; answers the
    /// cloud resources in place (ARNs), to be recorded on the placement.
    async fn ensure(
        &self,
        placement: &PlacementRecord,
        grants: &ramen_cloud::Grants,
    ) -> Result<Vec<String>, ProviderError>;

    /// Stores what the next (re)start of a track loads: snapshot, secrets, verbose flag.
    async fn write_config(
        &self,
        placement: &PlacementRecord,
        config: &ConfigTemplate,
    ) -> Result<(), ProviderError>;

    /// Builds (or finds) the Python environment of `snapshot` where the placement's workers run,
    /// and stores it in the blob store: once per deploy, so no worker start installs anything.
    async fn build_environment(
        &self,
        placement: &PlacementRecord,
        snapshot: &ramen_node_contract::SnapshotRef,
        timeout: std::time::Duration,
    ) -> Result<ramen_node_contract::environment::BuildOutcome, ProviderError>;

    /// Pushes the placement's live policy (keys, blocked and disabled lists, IP allow-list) to
    /// running workers and keeps it for the ones that start later.
    async fn apply_policy(&self, placement: &PlacementRecord) -> Result<PolicyPush, ProviderError>;

    /// Installs the group's edge rule (Cloud Armor, a WAF IP set) from the IP rules of
    /// `members`, the group's live placements on this provider (this one included): one rule
    /// per group, so it allows what any of them allows. The local edge reads each placement's
    /// rules from `ListEndpoints` instead.
    async fn set_edge_rule(
        &self,
        placement: &PlacementRecord,
        members: &[EdgeMember],
    ) -> Result<(), ProviderError>;

    /// Brings a track to `plan`: replicas, config, restarts one worker at a time; waits for
    /// ready up to the plan's timeout. Not ready in time is an answer, not an error.
    async fn rollout(
        &self,
        placement: &PlacementRecord,
        plan: RolloutPlan,
    ) -> Result<RolloutReport, ProviderError>;

    /// The placement's workers as they are now.
    async fn workers(&self, placement: &PlacementRecord) -> Result<Vec<WorkerView>, ProviderError>;

    /// Brings what routes to the placement (a cloud load balancer's targets) to the workers
    /// that serve now, for workers the cluster replaced outside a rollout. Nothing where the
    /// route follows the workers by itself (the local edge).
    async fn sync_route(&self, _placement: &PlacementRecord) -> Result<(), ProviderError> {
        Ok(())
    }

    /// After a control-plane restart: bring back the workers the record says should run.
    async fn resume(&self, placement: &PlacementRecord) -> Result<(), ProviderError>;

    /// One teardown step; `Waiting` means call again later (e.g. a namespace still terminating).
    async fn teardown(
        &self,
        target: &TeardownTarget,
        step: TeardownAction,
    ) -> Result<StepOutcome, ProviderError>;
}

/// The providers this build can drive, by kind.
#[derive(Clone, Default)]
pub struct Providers {
    by_kind: HashMap<ProviderKind, Arc<dyn ZoneProvider>>,
}

impl Providers {
    pub fn with(mut self, provider: Arc<dyn ZoneProvider>) -> Self {
        self.by_kind.insert(provider.kind(), provider);
        self
    }

    pub fn get(&self, kind: ProviderKind, zone: &str) -> Result<Arc<dyn ZoneProvider>, Error> {
        self.by_kind
            .get(&kind)
            .cloned()
            .ok_or_else(|| Error::ProviderUnavailable { provider: kind, zone: zone.to_owned() })
    }
}
