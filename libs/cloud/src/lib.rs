//! The cloud resources around a Kubernetes zone's namespace, which the cluster does not make:
//! - the **identity** the workers run as (an IAM role their ServiceAccount assumes through
//!   IRSA), granted the group's service-account rules and only those;
//! - the **route** clients reach the zone by (a target group of the workers' pod IPs, and the
//!   group's listener rules on the shared load balancer: `ramen-zone: <zone>` picks one zone,
//!   any other request is spread by the weights the rebalancer moves);
//! - the group's **edge rule** (a WAF IP set per group, referenced by a rule of the shared
//!   web ACL): one per group, so two zones of a group share it and it allows the union of
//!   their lists.
//!
//! On GCP the same three are a Google service account bound by Workload Identity, the zone's
//! NEG behind the group's backend services and URL map route rules, and a Cloud Armor policy
//! per group.
//!
//! [`ZoneCloud`] is the port the zone-manager's Kubernetes provider calls; [`aws::AwsCloud`]
//! and [`gcp::GcpCloud`] implement it. Every operation is idempotent and safe to repeat after a crash; everything
//! made carries ownership tags ([`MANAGED_BY_TAG`]), and teardown deletes only what carries
//! them. Removal answers [`Outcome::Waiting`] while the cloud still holds something back
//! (a target group a rule still uses), so the saga asks again.

pub mod aws;
pub mod gcp;
pub mod names;
#[cfg(feature = "test-util")]
pub mod testing;

use std::net::IpAddr;

use async_trait::async_trait;
use ipnet::IpNet;
use ramen_config::ClusterConfig;

/// Tag (AWS; on GCP a word of the description) marking what ramen made: only resources with `ramen.io/managed-by = ramen` are
/// changed or deleted.
pub const MANAGED_BY_TAG: &str = "ramen.io/managed-by";
pub const MANAGED_BY: &str = "ramen";
/// The group and zone a resource belongs to (the rebalancer finds target groups by these).
pub const GROUP_TAG: &str = "ramen.io/group";
pub const ZONE_TAG: &str = "ramen.io/zone";
/// The request header that pins a client to one zone.
pub const ZONE_HEADER: &str = "ramen-zone";

/// One placement (group × zone) as its cloud resources need it.
#[derive(Clone, Copy, Debug)]
pub struct PlacementRef<'a> {
    pub group: &'a str,
    pub zone: &'a str,
    /// `ramen-<group>-<zone>`.
    pub namespace: &'a str,
    /// The cloud location the workers pin to (`us-central1-a`, `us-east-1a`).
    pub location: &'a str,
    /// The Kubernetes ServiceAccount the workers run as (in `namespace`).
    pub service_account: &'a str,
    /// The cluster the zone runs in: region, account, load balancer, web ACL.
    pub cluster: &'a ClusterConfig,
    /// The workers' MCP port: where the load balancer sends requests and health checks.
    pub port: u16,
}

/// One of the group's service-account rules for this cloud.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Actions (`s3:GetObject`) or roles.
    pub permissions: Vec<String>,
    /// Resources they apply to; empty = every resource (`*`).
    pub resources: Vec<String>,
}

pub use ramen_grant_bounds::ProviderBounds;

/// A group's rules for one provider, with the bounds they must stay inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grants {
    pub rules: Vec<Grant>,
    pub bounds: ProviderBounds,
}

impl Grants {
    /// No rules (a local zone's: it applies none), under the default bounds.
    pub fn none() -> Self {
        Self { rules: Vec::new(), bounds: ramen_grant_bounds::Bounds::default().aws }
    }
}

/// The grants inside `bounds`, and the refusal naming the first that is not: the last check
/// before a rule reaches the cloud (auth checked it when it was set, but the bounds may have
/// been narrowed since). The identity is given the ones inside and the step then fails with
/// the refusal, so a narrowing takes away what it no longer allows.
pub(crate) fn within_bounds(
    provider: ramen_grant_bounds::Provider,
    grants: &[Grant],
    bounds: &ProviderBounds,
) -> (Vec<Grant>, Option<CloudError>) {
    let (mut kept, mut refused) = (Vec::new(), None);
    for (index, grant) in grants.iter().enumerate() {
        match ramen_grant_bounds::check(
            bounds,
            provider,
            index,
            &grant.permissions,
            &grant.resources,
        ) {
            Ok(()) => kept.push(grant.clone()),
            Err(out) => {
                refused.get_or_insert(CloudError::Refused(format!(
                    "service-account {out}; the rule is not applied until it is fixed on the group page or a super admin widens the bounds"
                )));
            }
        }
    }
    (kept, refused)
}

/// What the group's edge rule should let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeRule<'a> {
    /// Only these networks (the union of the group's zones' lists).
    Only(&'a [IpNet]),
    /// Everyone: every zone's list is empty (as the node's own rule).
    Everyone,
    /// The group has no zone left behind this edge: remove the rule and its IP sets.
    Remove,
}

/// What a step made or found, for the job log and the placement's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Made {
    /// Identifiers of the resources in place (ARNs), in the order they were made.
    pub resources: Vec<String>,
    /// One line for the log: what changed.
    pub note: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done(String),
    /// Not finished: ask again later (the cloud holds something back).
    Waiting(String),
}

#[derive(Debug, thiserror::Error)]
pub enum CloudError {
    /// Throttled, unreachable, busy, not consistent yet: retrying later can succeed.
    #[error("{0}")]
    Unavailable(String),
    /// A resource of that name exists and ramen did not make it: left alone.
    #[error("{0}")]
    NotOurs(String),
    /// The settings this needs are missing or wrong (names the key).
    #[error("{0}")]
    NotConfigured(String),
    /// Refused for good (invalid, denied).
    #[error("{0}")]
    Refused(String),
}

impl CloudError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// Per group, one change at a time from this process: a group's shared load-balancer rules
/// and edge rule are read-modify-write objects (another process's changes are caught by the
/// cloud's lock tokens and fingerprints).
#[derive(Default)]
pub(crate) struct GroupLocks(
    parking_lot::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>,
);

impl GroupLocks {
    pub(crate) fn of(&self, group: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        self.0.lock().entry(group.to_owned()).or_default().clone()
    }
}

/// Bounded retries of read-modify-write steps that lose a race (a lock token, fingerprint or
/// etag gone stale, a priority taken by another writer, IAM not consistent yet).
pub(crate) const ATTEMPTS: usize = 6;

pub(crate) async fn pause(attempt: usize) {
    tokio::time::sleep(std::time::Duration::from_millis(200 * (1 << attempt.min(4)))).await;
}

/// The cloud resources of a provider's zones. Each method is one idempotent step.
#[async_trait]
pub trait ZoneCloud: Send + Sync {
    /// Creates or updates the workers' identity with exactly `grants`, each of which must lie
    /// inside `bounds` (else nothing is changed and the answer is `Refused`); answers its id.
    async fn ensure_identity(
        &self,
        placement: &PlacementRef<'_>,
        grants: &[Grant],
        bounds: &ProviderBounds,
    ) -> Result<Made, CloudError>;

    /// Creates the placement's route (nothing registered yet) and joins it to the group's
    /// weighted route; a zone joining starts at the mean weight of the others.
    async fn ensure_route(&self, placement: &PlacementRef<'_>) -> Result<Made, CloudError>;

    /// Makes the route's registered targets exactly `ips` (the workers that serve now).
    async fn sync_targets(
        &self,
        placement: &PlacementRef<'_>,
        ips: &[IpAddr],
    ) -> Result<Made, CloudError>;

    /// Sets the group's edge rule behind `cluster`'s load balancer.
    async fn set_edge_rule(
        &self,
        group: &str,
        cluster: &ClusterConfig,
        rule: EdgeRule<'_>,
    ) -> Result<Made, CloudError>;

    /// Leaves the group's routes, then deletes the placement's own route.
    async fn remove_route(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError>;

    async fn remove_identity(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError>;
}
