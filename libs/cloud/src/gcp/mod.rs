//! GCP (GKE zones): a Google service account per placement bound to the namespace's
//! ServiceAccount by Workload Identity, the zone's standalone NEG behind the group's backend
//! services and route rules on the shared URL map, and a Cloud Armor policy per group.
//!
//! Choices, and why:
//! - **GKE makes the NEG, ramen joins it**: the worker Service's `cloud.google.com/neg`
//!   annotation has GKE's NEG controller create `ramen-<group>-<zone>` and keep its endpoints
//!   to the ready pods, so ramen registers no endpoints itself; it adds the NEG to the group's
//!   backend services once the zone has serving workers, and takes it out before the
//!   namespace goes (GKE cannot delete a NEG a backend service still uses).
//! - **Two backend services**: `ramen-<group>` holds every zone's NEG (the capacity scalers
//!   the rebalancer moves) for unpinned requests; `ramen-<group>-<zone>` holds one zone's NEG
//!   for requests with `ramen-zone: <zone>`, because a URL map route rule can only send to a
//!   backend service, not to one of its backends.
//! - **Route rules, not path rules**: header matches exist only in route rules, so the group's
//!   rules live in one path matcher of the shared URL map (`path_matcher`, or the map's only
//!   one), told apart from the operator's by their description.
//! - **The group's roles on the project, with conditions**: a rule's resources become an IAM
//!   condition on `resource.name` of the project binding (one API, honoured by the services
//!   that support resource conditions: Cloud Storage, Secret Manager, Pub/Sub, ...); a rule
//!   without resources is a plain project binding.
//!
//! Every change is made with the resource's fingerprint (Compute) or etag (IAM policies); a
//! stale one is read again and retried, never overwritten. Compute operations are followed to
//! `DONE` for a bounded time; past it the step answers unavailable and the saga asks again.

mod edge;
mod errors;
mod identity;
mod route;

use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use async_trait::async_trait;
use google_cloud_compute_v1::client::{
    BackendServices, HealthChecks, NetworkEndpointGroups, SecurityPolicies, UrlMaps,
};
use google_cloud_iam_admin_v1::client::Iam;
use google_cloud_resourcemanager_v3::client::Projects;
use ramen_config::ClusterConfig;
use tokio::sync::OnceCell;

use crate::{CloudError, EdgeRule, Grant, GroupLocks, Made, Outcome, PlacementRef, ZoneCloud};

#[derive(Clone, Debug)]
pub struct GcpCloudSettings {
    /// Empty = Google's APIs; else one endpoint serving the Compute, IAM and Resource Manager
    /// REST paths (a local stand-in).
    pub endpoint: String,
    /// Send no credentials (a stand-in); otherwise Application Default Credentials.
    pub anonymous: bool,
    /// One call with the client's own retries: past it the step fails as unavailable and is
    /// retried later, so an API that never answers cannot hold a group's lock.
    pub call_timeout: Duration,
    /// How long a step follows a Compute operation before answering unavailable (the saga
    /// asks again, and the retried step finds the operation's result or waits on it).
    pub operation_wait: Duration,
}

impl Default for GcpCloudSettings {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            anonymous: false,
            call_timeout: Duration::from_secs(60),
            operation_wait: Duration::from_secs(120),
        }
    }
}

/// The clients of every project (the project is a field of each request).
#[derive(Clone)]
pub(crate) struct Clients {
    pub backend_services: BackendServices,
    pub health_checks: HealthChecks,
    pub url_maps: UrlMaps,
    pub security_policies: SecurityPolicies,
    pub negs: NetworkEndpointGroups,
    pub iam: Iam,
    pub projects: Projects,
}

pub struct GcpCloud {
    settings: GcpCloudSettings,
    clients: OnceCell<Clients>,
    /// The group's URL map rules, backend services and security policy, one change at a
    /// time (another process's changes are caught by the fingerprints).
    groups: GroupLocks,
}

macro_rules! build {
    ($client:ty, $settings:expr) => {{
        let mut builder = <$client>::builder();
        if !$settings.endpoint.is_empty() {
            builder = builder.with_endpoint(&$settings.endpoint);
        }
        if $settings.anonymous {
            builder = builder.with_credentials(
                google_cloud_auth::credentials::anonymous::Builder::new().build(),
            );
        }
        builder.build().await.map_err(|e| {
            CloudError::NotConfigured(format!(
                "{} client (Application Default Credentials?): {e}",
                stringify!($client)
            ))
        })?
    }};
}

impl GcpCloud {
    pub fn new(settings: GcpCloudSettings) -> Self {
        Self { settings, clients: OnceCell::new(), groups: GroupLocks::default() }
    }

    async fn clients(&self) -> Result<&Clients, CloudError> {
        let settings = &self.settings;
        self.clients
            .get_or_try_init(|| async {
                Ok(Clients {
                    backend_services: build!(BackendServices, settings),
                    health_checks: build!(HealthChecks, settings),
                    url_maps: build!(UrlMaps, settings),
                    security_policies: build!(SecurityPolicies, settings),
                    negs: build!(NetworkEndpointGroups, settings),
                    iam: build!(Iam, settings),
                    projects: build!(Projects, settings),
                })
            })
            .await
    }

    fn context<'a>(&'a self, clients: &'a Clients, project: &'a str) -> Context<'a> {
        Context { clients, project, settings: &self.settings }
    }
}

/// What every step needs: the clients, the project, the time limits.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    pub clients: &'a Clients,
    pub project: &'a str,
    pub settings: &'a GcpCloudSettings,
}

impl Context<'_> {
    /// One call within `call_timeout`.
    pub async fn call<T, E, F>(&self, what: &str, call: F) -> Result<Result<T, E>, CloudError>
    where
        F: Future<Output = Result<T, E>>,
    {
        tokio::time::timeout(self.settings.call_timeout, call).await.map_err(|_| {
            CloudError::Unavailable(format!(
                "{what}: no answer within {:?}; retrying",
                self.settings.call_timeout
            ))
        })
    }
}

fn project(cluster: &ClusterConfig) -> Result<&str, CloudError> {
    if cluster.project.is_empty() {
        return Err(CloudError::NotConfigured(
            "the zone's cluster has no project (kubernetes.clusters.<name>.project)".into(),
        ));
    }
    Ok(&cluster.project)
}

#[async_trait]
impl ZoneCloud for GcpCloud {
    async fn ensure_identity(
        &self,
        placement: &PlacementRef<'_>,
        grants: &[Grant],
        bounds: &crate::ProviderBounds,
    ) -> Result<Made, CloudError> {
        let (grants, refused) =
            crate::within_bounds(ramen_grant_bounds::Provider::Gcp, grants, bounds);
        if placement.cluster.project.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no service account: the cluster has no project".into(),
            });
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(placement.cluster)?);
        let made = identity::ensure(context, placement, &grants).await?;
        refused.map_or(Ok(made), Err)
    }

    async fn ensure_route(&self, placement: &PlacementRef<'_>) -> Result<Made, CloudError> {
        if placement.cluster.url_map.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no route: the cluster has no url_map".into(),
            });
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(placement.cluster)?);
        let lock = self.groups.of(placement.group);
        let _guard = lock.lock().await;
        route::ensure(context, placement).await
    }

    /// GKE keeps the NEG's endpoints to the ready pods; this joins the NEG to the group's
    /// backend services while the zone has serving workers and takes it out when it has none.
    async fn sync_targets(
        &self,
        placement: &PlacementRef<'_>,
        ips: &[IpAddr],
    ) -> Result<Made, CloudError> {
        if placement.cluster.url_map.is_empty() {
            return Ok(Made::default());
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(placement.cluster)?);
        let lock = self.groups.of(placement.group);
        let _guard = lock.lock().await;
        route::set_serving(context, placement, !ips.is_empty()).await
    }

    async fn set_edge_rule(
        &self,
        group: &str,
        cluster: &ClusterConfig,
        rule: EdgeRule<'_>,
    ) -> Result<Made, CloudError> {
        if cluster.url_map.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no edge rule: the cluster has no url_map, so no backend service to guard \
                       (the nodes' allow-lists apply)"
                    .into(),
            });
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(cluster)?);
        let lock = self.groups.of(group);
        let _guard = lock.lock().await;
        edge::set(context, group, rule).await
    }

    async fn remove_route(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
        if placement.cluster.url_map.is_empty() {
            return Ok(Outcome::Done("no route was made (no url_map)".into()));
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(placement.cluster)?);
        let lock = self.groups.of(placement.group);
        let _guard = lock.lock().await;
        route::remove(context, placement).await
    }

    async fn remove_identity(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
        if placement.cluster.project.is_empty() {
            return Ok(Outcome::Done("no service account was made".into()));
        }
        let clients = self.clients().await?;
        let context = self.context(clients, project(placement.cluster)?);
        identity::remove(context, placement).await
    }
}
