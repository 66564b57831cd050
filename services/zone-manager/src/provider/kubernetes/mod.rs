//! The Kubernetes zone provider, for `gcp` (GKE) and `aws` (EKS) zones: a placement is the
//! namespace `ramen-<group>-<zone>` in the cluster that holds the zone's location, with the
//! objects [`manifests`] renders. One instance per cloud; each zone picks its cluster from
//! `[kubernetes.clusters]` by its location.
//!
//! Nothing is kept in memory that the cluster does not hold: the config last written, what each
//! track runs and the live policy are Secrets in the namespace, worker counts and states are
//! read from the pods. So a restarted zone-manager, or a second one, sees what the first did.
//! The cloud resources around a zone (IAM identity, load-balancer route, WAF edge rule) are
//! made through the provider's [`ZoneCloud`] (`ramen-cloud`), when the cloud has one, in the
//! same steps: `ensure`, after each rollout (the registered targets), `set_edge_rule`, and the
//! teardown steps of the same names.

mod build;
mod cloud;
mod clusters;
pub mod manifests;
mod objects;
mod pods;
mod rollout;
mod settings;
mod teardown;

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::join_all;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;

pub use settings::{ADMIN_PORT, GRPC_PORT, KubeSettings, MCP_PORT, cloud_identity};

use self::manifests::{COMPONENT_LABEL, Target};
use self::objects::{apply, get, is_ours, list, namespaced};
use crate::model::{PlacementRecord, ProviderKind, TrackKind, ZoneRecord};
use ramen_cloud::ZoneCloud;

use crate::provider::{
    ConfigTemplate, EdgeMember, PlacementNames, PolicyPush, ProviderError, RolloutPlan,
    RolloutReport, StepOutcome, TeardownAction, TeardownTarget, WorkerView, ZoneProvider,
};

pub struct KubernetesProvider {
    kind: ProviderKind,
    settings: Arc<KubeSettings>,
    clusters: clusters::Clusters,
    /// The zones' cloud resources; `None` = pods only (no cloud adapter for this provider).
    cloud: Option<Arc<dyn ZoneCloud>>,
}

/// One placement in its cluster: what every operation works with.
pub(crate) struct Placement<'a> {
    pub client: kube::Client,
    pub settings: &'a KubeSettings,
    pub target: Target<'a>,
}

impl Placement<'_> {
    pub fn api<K>(&self) -> Api<K>
    where
        K: objects::Object + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        namespaced(&self.client, self.target.namespace)
    }

    /// The placement's worker pods (builders left out).
    pub async fn worker_pods(&self) -> Result<Vec<Pod>, ProviderError> {
        let selector = format!("{},{COMPONENT_LABEL}=worker", manifests::selector(&self.target));
        list(&self.api::<Pod>(), &selector).await
    }
}

impl KubernetesProvider {
    pub fn new(
        kind: ProviderKind,
        settings: Arc<KubeSettings>,
        cloud: Option<Arc<dyn ZoneCloud>>,
    ) -> Self {
        Self { kind, settings, clusters: clusters::Clusters::default(), cloud }
    }

    fn cluster_of(
        &self,
        zone: &str,
        region: &str,
    ) -> Result<&ramen_config::ClusterConfig, ProviderError> {
        Ok(self.settings.cluster(self.kind, zone, region)?.1)
    }

    async fn placement<'a>(
        &'a self,
        group: &'a str,
        zone: &'a str,
        namespace: &'a str,
        region: &'a str,
    ) -> Result<Placement<'a>, ProviderError> {
        let (name, cluster) = self.settings.cluster(self.kind, zone, region)?;
        let client = self.clusters.client(name, cluster).await?;
        let target = Target { provider: self.kind, group, zone, namespace, region };
        Ok(Placement { client, settings: &self.settings, target })
    }

    async fn of<'a>(&'a self, record: &'a PlacementRecord) -> Result<Placement<'a>, ProviderError> {
        self.placement(&record.group, &record.zone, &record.namespace, &record.region).await
    }
}

#[async_trait]
impl ZoneProvider for KubernetesProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn names(&self, group: &str, zone: &ZoneRecord, namespace: &str) -> PlacementNames {
        let identity = self
            .settings
            .cluster(self.kind, &zone.name, &zone.region)
            .map(|(_, cluster)| cloud_identity(self.kind, cluster, group, &zone.name))
            .unwrap_or_default();
        PlacementNames {
            service_account: if identity.is_empty() {
                format!("{namespace}/{}", manifests::WORKER_SERVICE_ACCOUNT)
            } else {
                identity
            },
            route: format!("/mcp/{group}"),
        }
    }

    /// Namespace, service account, network policy, per-track Service and budget, policy; then
    /// the cloud's identity and route.
    async fn ensure(
        &self,
        record: &PlacementRecord,
        grants: &ramen_cloud::Grants,
    ) -> Result<Vec<String>, ProviderError> {
        let placement = self.of(record).await?;
        let target = &placement.target;
        let namespaces: Api<Namespace> = Api::all(placement.client.clone());
        if let Some(existing) = get(&namespaces, target.namespace).await? {
            if !is_ours(&existing, target) {
                return Err(ProviderError::Failed(format!(
                    "namespace {} exists and ramen did not make it for {}/{} (labels {}); \
                     remove it or pick another zone name",
                    target.namespace,
                    target.group,
                    target.zone,
                    manifests::selector(target)
                )));
            }
            if existing.metadata.deletion_timestamp.is_some() {
                return Err(ProviderError::Unavailable(format!(
                    "namespace {} is still terminating from an earlier teardown; try again once it is gone",
                    target.namespace
                )));
            }
        }
        apply(&namespaces, &manifests::namespace(target)).await?;
        let identity = self
            .settings
            .cluster(self.kind, &record.zone, &record.region)
            .map(|(_, cluster)| cloud_identity(self.kind, cluster, &record.group, &record.zone))?;
        apply(&placement.api::<ServiceAccount>(), &manifests::service_account(target, &identity))
            .await?;
        apply(
            &placement.api::<NetworkPolicy>(),
            &manifests::network_policy(target, &self.settings),
        )
        .await?;
        for track in TrackKind::BOTH {
            apply(&placement.api::<Service>(), &manifests::service(target, track)).await?;
            apply(
                &placement.api::<PodDisruptionBudget>(),
                &manifests::disruption_budget(target, track),
            )
            .await?;
        }
        write_policy(&placement, record).await?;
        match &self.cloud {
            Some(cloud) => {
                let cluster = self.cluster_of(&record.zone, &record.region)?;
                cloud::ensure(cloud.as_ref(), &placement, cluster, grants).await
            }
            None => Ok(Vec::new()),
        }
    }

    async fn write_config(
        &self,
        record: &PlacementRecord,
        config: &ConfigTemplate,
    ) -> Result<(), ProviderError> {
        let placement = self.of(record).await?;
        let json = serde_json::to_vec(config).map_err(|e| ProviderError::Failed(e.to_string()))?;
        apply(&placement.api::<Secret>(), &manifests::written_secret(&placement.target, json))
            .await?;
        Ok(())
    }

    async fn build_environment(
        &self,
        record: &PlacementRecord,
        snapshot: &ramen_node_contract::SnapshotRef,
        timeout: std::time::Duration,
    ) -> Result<ramen_node_contract::environment::BuildOutcome, ProviderError> {
        let placement = self.of(record).await?;
        build::run(&placement, snapshot, timeout).await
    }

    /// The policy Secret (what every node follows and every new pod starts with), then a push
    /// to each running node for the change to apply at once. A node the push cannot reach
    /// (the control plane outside the cluster) picks the Secret up when the kubelet refreshes it.
    async fn apply_policy(&self, record: &PlacementRecord) -> Result<PolicyPush, ProviderError> {
        let placement = self.of(record).await?;
        write_policy(&placement, record).await?;
        let policy =
            crate::provider::policy::node_policy(record, &self.settings.kubernetes.trusted_proxies);
        let targets: Vec<(String, String)> = placement
            .worker_pods()
            .await?
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter_map(|pod| {
                let ip = pod.status.as_ref()?.pod_ip.clone()?;
                Some((pods::name(pod), format!("{ip}:{GRPC_PORT}")))
            })
            .collect();
        let nodes = &*self.settings.nodes.client;
        let results = join_all(targets.iter().map(|(_, grpc)| {
            crate::provider::policy::push_one(nodes, record, grpc, policy.clone())
        }))
        .await;
        let mut outcome = PolicyPush::default();
        for ((id, _), result) in targets.into_iter().zip(results) {
            match result {
                Ok(()) => outcome.pushed += 1,
                Err(reason) => {
                    outcome.failed.push((id, format!("{reason}; it follows the policy Secret")))
                }
            }
        }
        Ok(outcome)
    }

    /// The node allow-list is in the policy; this is the group's rule at the cloud's edge.
    async fn set_edge_rule(
        &self,
        record: &PlacementRecord,
        members: &[EdgeMember],
    ) -> Result<(), ProviderError> {
        let Some(cloud) = &self.cloud else { return Ok(()) };
        let cluster = self.cluster_of(&record.zone, &record.region)?;
        let rule = cloud::edge_rule(&self.settings, self.kind, cluster, members)?;
        let note = cloud::set_edge_rule(cloud.as_ref(), &record.group, cluster, rule).await?;
        tracing::info!(group = %record.group, zone = %record.zone, %note, "edge rule set");
        Ok(())
    }

    async fn rollout(
        &self,
        record: &PlacementRecord,
        plan: RolloutPlan,
    ) -> Result<RolloutReport, ProviderError> {
        let placement = self.of(record).await?;
        let report = rollout::run(&placement, record, plan).await?;
        if let Some(cloud) = &self.cloud {
            let cluster = self.cluster_of(&record.zone, &record.region)?;
            cloud::sync_targets(cloud.as_ref(), &placement, cluster).await?;
        }
        Ok(report)
    }

    async fn sync_route(&self, record: &PlacementRecord) -> Result<(), ProviderError> {
        let Some(cloud) = &self.cloud else { return Ok(()) };
        let placement = self.of(record).await?;
        let cluster = self.cluster_of(&record.zone, &record.region)?;
        cloud::sync_targets(cloud.as_ref(), &placement, cluster).await
    }

    /// Read from the cluster: the pods that exist now, not what was asked for.
    async fn workers(&self, record: &PlacementRecord) -> Result<Vec<WorkerView>, ProviderError> {
        let placement = self.of(record).await?;
        let mut views: Vec<WorkerView> = placement
            .worker_pods()
            .await?
            .iter()
            .filter_map(|pod| pods::view(pod, record.size))
            .collect();
        views.sort_by(|a, b| (a.track, &a.id).cmp(&(b.track, &b.id)));
        Ok(views)
    }

    /// The cluster keeps the workers running while the control plane is away.
    async fn resume(&self, _record: &PlacementRecord) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn teardown(
        &self,
        target: &TeardownTarget,
        step: TeardownAction,
    ) -> Result<StepOutcome, ProviderError> {
        let namespace = crate::validate::namespace(&target.group, &target.zone)
            .map_err(|e| ProviderError::Failed(e.to_string()))?;
        let placement =
            self.placement(&target.group, &target.zone, &namespace, &target.region).await?;
        let Some(cloud) = &self.cloud else { return teardown::step(&placement, step).await };
        let cloud = cloud.as_ref();
        let cluster = self.cluster_of(&target.zone, &target.region)?;
        // The cloud's part first where it stops traffic (targets, route), last where the
        // cluster's part depends on it (the identity the ServiceAccount names).
        match step {
            TeardownAction::DrainWorkers => {
                cloud::deregister_all(cloud, &placement, cluster).await?;
                teardown::step(&placement, step).await
            }
            TeardownAction::RemoveRoute => {
                let outcome = cloud::remove_route(cloud, &placement, cluster).await?;
                if let ramen_cloud::Outcome::Waiting(why) = outcome {
                    return Ok(StepOutcome::Waiting(why));
                }
                Ok(cloud::then(outcome, teardown::step(&placement, step).await?))
            }
            TeardownAction::RemoveEdgeRule => {
                let rule =
                    cloud::edge_rule(&self.settings, self.kind, cluster, &target.edge_members)?;
                let note = cloud::set_edge_rule(cloud, &target.group, cluster, rule).await?;
                Ok(StepOutcome::Done(note))
            }
            TeardownAction::RemoveIdentity => {
                let cluster_part = teardown::step(&placement, step).await?;
                if let StepOutcome::Waiting(_) = cluster_part {
                    return Ok(cluster_part);
                }
                let outcome = cloud::remove_identity(cloud, &placement, cluster).await?;
                Ok(cloud::then(outcome, cluster_part))
            }
            TeardownAction::RemoveNamespace => teardown::step(&placement, step).await,
        }
    }
}

/// The `ramen-policy` Secret: the placement's live policy as a node reads it from its file.
async fn write_policy(
    placement: &Placement<'_>,
    record: &PlacementRecord,
) -> Result<(), ProviderError> {
    let policy = crate::provider::policy::policy_config(
        record,
        &placement.settings.kubernetes.trusted_proxies,
        record.verbose,
    );
    let text = toml::to_string(&policy).map_err(|e| ProviderError::Failed(e.to_string()))?;
    apply(
        &placement.api::<Secret>(),
        &manifests::policy_secret(&placement.target, text.into_bytes()),
    )
    .await?;
    Ok(())
}
