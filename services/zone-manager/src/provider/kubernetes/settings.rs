//! How the Kubernetes provider runs workers, resolved once from the configuration.

use std::path::PathBuf;
use std::time::Duration;

use ramen_config::{ClusterConfig, Config, DrainMode, KubernetesConfig};
use ramen_node_contract::BlobConfig;

use crate::model::ProviderKind;
use crate::provider::ProviderError;
use crate::provider::local::NodeAdmin;
use crate::provider::node_bus::NodeBus;

/// The node's fixed ports inside a pod (the worker image's `EXPOSE`).
pub const MCP_PORT: u16 = 8000;
pub const ADMIN_PORT: u16 = 9090;
pub const GRPC_PORT: u16 = 7105;

#[derive(Clone, Debug)]
pub struct KubeSettings {
    pub kubernetes: KubernetesConfig,
    /// Where workers fetch snapshots and environments: S3 in a real cluster.
    pub blob: BlobConfig,
    /// The bus as workers reach it; empty = no load reports.
    pub nats_url: String,
    /// The NATS user each placement's nodes report as.
    pub node_bus: NodeBus,
    pub drain_mode: DrainMode,
    pub drain_timeout: Duration,
    pub drain_linger: Duration,
    pub nodes: NodeAdmin,
}

impl KubeSettings {
    pub fn from_config(config: &Config, nats_url: String, nodes: NodeAdmin) -> Self {
        let kubernetes = config.kubernetes.clone();
        let blob = if config.s3.bucket.is_empty() {
            // Only pods sharing the control plane's disk read this (tests with a local kubelet).
            BlobConfig { dir: Some(config.data_dir.join("blobs")), s3: None }
        } else {
            BlobConfig { dir: None, s3: Some(config.s3.clone()) }
        };
        let nats_url =
            if kubernetes.nats_url.is_empty() { nats_url } else { kubernetes.nats_url.clone() };
        Self {
            kubernetes,
            blob,
            nats_url,
            node_bus: NodeBus::default(),
            drain_mode: config.drain.mode,
            drain_timeout: config.drain.timeout,
            drain_linger: config.drain.linger,
            nodes,
        }
    }

    /// Whether any cluster is configured for `kind` (else the provider is not offered).
    pub fn serves(&self, kind: ProviderKind) -> bool {
        self.kubernetes.clusters.values().any(|c| c.provider == kind.name())
    }

    /// The cluster a zone of `kind` at `region` runs in, or an error naming what to configure.
    pub fn cluster(
        &self,
        kind: ProviderKind,
        zone: &str,
        region: &str,
    ) -> Result<(&str, &ClusterConfig), ProviderError> {
        self.kubernetes.cluster_for(kind.name(), region).ok_or_else(|| {
            ProviderError::Failed(format!(
                "no {} cluster holds zone `{zone}` (location {region:?}): add \
                 [kubernetes.clusters.<name>] with provider = \"{}\" and the region that holds it",
                kind.name(),
                kind.name()
            ))
        })
    }

    pub fn python(&self) -> PathBuf {
        PathBuf::from(&self.kubernetes.python)
    }

    pub fn site_packages(&self) -> Vec<PathBuf> {
        self.kubernetes.site_packages.iter().map(PathBuf::from).collect()
    }

    /// How long a pod may take to stop: the node's drain and its linger, then a margin for the
    /// runtime.
    pub fn grace_period_seconds(&self) -> i64 {
        (self.drain_timeout + self.drain_linger).as_secs_f64().ceil() as i64 + 15
    }
}

/// The identity workers of a placement run as, by cloud: a Google service account bound by
/// Workload Identity, or an IAM role assumed through IRSA. Empty without a project / account.
pub fn cloud_identity(
    provider: ProviderKind,
    cluster: &ClusterConfig,
    group: &str,
    zone: &str,
) -> String {
    match provider {
        ProviderKind::Gcp if !cluster.project.is_empty() => {
            format!("{}@{}.iam.gserviceaccount.com", gcp_account_id(group, zone), cluster.project)
        }
        ProviderKind::Aws if !cluster.account_id.is_empty() => {
            let partition = ramen_cloud::names::partition(&cluster.region);
            let role = ramen_cloud::names::role(group, zone);
            format!("arn:{partition}:iam::{}:role/{role}", cluster.account_id)
        }
        _ => String::new(),
    }
}

/// A Google service account id is 6 to 30 characters: `ramen-<group>-<zone>` when it fits,
/// else its start and a hash of the whole, so two placements never share one.
pub fn gcp_account_id(group: &str, zone: &str) -> String {
    ramen_cloud::names::service_account(group, zone)
}
