//! Kubernetes zones (`gcp`, `aws`): the clusters their workers run in, how the zone-manager
//! reaches each one, and what the worker pods look like.
//!
//! ```toml
//! [kubernetes]
//! worker_image = "ghcr.io/ramen-mcp/ramen-worker:0.1.0"
//!
//! [kubernetes.clusters.gke-us-central1]
//! provider = "gcp"
//! region = "us-central1"          # holds the zones us-central1-a, -b, -c, ...
//! access = "kubeconfig"           # or "in-cluster"
//! context = "gke_acme_us-central1_ramen"
//! project = "acme"                # Workload Identity service accounts live here
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ConfigError;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KubernetesConfig {
    /// Clusters by name. A zone runs in the cluster of its provider whose `region` holds the
    /// zone's location (or that lists the location in `zones`).
    pub clusters: BTreeMap<String, ClusterConfig>,
    /// The worker image: the Rust node and the Python runtime (`deploy/worker.Dockerfile`).
    pub worker_image: String,
    /// `IfNotPresent`, `Always` or `Never`.
    pub image_pull_policy: String,
    /// The control plane's namespace: the only source allowed to reach a worker's admin and
    /// gRPC ports, and where the bus is reached.
    pub control_plane_namespace: String,
    /// The bus as workers reach it (load reports); empty = `nats.url`.
    pub nats_url: String,
    /// Where workers may connect beyond DNS and the bus: the blob store (S3) and whatever the
    /// group's code calls. Default: any address on 443.
    pub egress_cidrs: Vec<String>,
    pub egress_ports: Vec<u16>,
    /// Scale the stable track on the node's in-flight calls (`ramen_mcp_in_flight`, needs a
    /// custom-metrics adapter such as prometheus-adapter); false = on CPU.
    pub hpa_in_flight_metric: bool,
    /// Load-balancer proxies whose `X-Forwarded-For` the nodes believe.
    pub trusted_proxies: Vec<String>,
    /// Bind the node to the pod IP rather than every address.
    pub bind_pod_ip: bool,
    /// How often a rollout or teardown re-reads the cluster while it waits.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// The worker image's interpreter, and directories of it every environment sees (a
    /// preinstalled MCP SDK).
    pub python: String,
    pub site_packages: Vec<String>,
    /// Extra `pip install` arguments of the environment builder (an index URL).
    pub pip_args: Vec<String>,
    /// How often each cloud placement's load-balancer targets are re-synced with its pods,
    /// for pods the cluster replaced outside a rollout (zero: only at rollouts).
    #[serde(with = "humantime_serde")]
    pub route_sync_interval: Duration,
    /// The AWS APIs (IAM, ELBv2, WAFv2) of AWS zones' cloud resources; empty = AWS (or
    /// `AWS_ENDPOINT_URL`); a stand-in such as moto in tests.
    pub aws_endpoint: String,
    /// The Google APIs (Compute, IAM, Resource Manager) of GCP zones' cloud resources, all at
    /// one URL; empty = Google's own endpoints; a local stand-in in tests.
    pub gcp_endpoint: String,
    /// Send no credentials to `gcp_endpoint` (a stand-in); otherwise Application Default
    /// Credentials.
    pub gcp_anonymous: bool,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        Self {
            clusters: BTreeMap::new(),
            worker_image: format!("ghcr.io/ramen-mcp/ramen-worker:{}", env!("CARGO_PKG_VERSION")),
            image_pull_policy: "IfNotPresent".into(),
            control_plane_namespace: "ramen".into(),
            nats_url: String::new(),
            egress_cidrs: vec!["0.0.0.0/0".into()],
            egress_ports: vec![443],
            hpa_in_flight_metric: false,
            trusted_proxies: Vec::new(),
            bind_pod_ip: false,
            poll_interval: Duration::from_secs(2),
            python: "/usr/bin/python3".into(),
            site_packages: Vec::new(),
            pip_args: Vec::new(),
            route_sync_interval: Duration::from_secs(30),
            aws_endpoint: String::new(),
            gcp_endpoint: String::new(),
            gcp_anonymous: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterConfig {
    /// `gcp` (GKE) or `aws` (EKS).
    pub provider: String,
    /// The cluster's region (`us-central1`, `us-east-1`); a regional cluster spans its zones.
    pub region: String,
    /// Locations this cluster serves beyond those its region holds (a zonal cluster, say).
    pub zones: Vec<String>,
    pub access: ClusterAccess,
    /// `access = "kubeconfig"`: the file (empty = `$KUBECONFIG`, then `~/.kube/config`).
    pub kubeconfig: String,
    /// `access = "kubeconfig"`: the context (empty = the file's current context).
    pub context: String,
    /// GCP: the project of the workers' Google service accounts (Workload Identity).
    pub project: String,
    /// AWS: the account of the workers' IAM roles (IRSA).
    pub account_id: String,
    /// AWS: the cluster's OIDC issuer without `https://`
    /// (`oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE`), registered as an IAM OIDC provider;
    /// with `account_id`, each placement gets an IAM role its ServiceAccount assumes.
    pub oidc_provider: String,
    /// AWS: the VPC of the cluster's pods, where each placement's target group is made.
    pub vpc_id: String,
    /// AWS: the shared ALB listener (HTTPS) every zone of this cluster is reached through;
    /// empty = ramen makes no load-balancer route.
    pub listener_arn: String,
    /// GCP: the shared global URL map (external Application Load Balancer) every zone of this
    /// cluster is reached through; each group gets route rules in it, backend services, a
    /// health check and a Cloud Armor policy. Empty = ramen makes no load-balancer route.
    pub url_map: String,
    /// GCP: the URL map's path matcher (serving the MCP hostname) the route rules go in;
    /// empty = the URL map's only path matcher.
    pub path_matcher: String,
    /// AWS: the regional WAFv2 web ACL on that ALB, where each group's IP rules become a rule
    /// over the group's IP sets; empty = the nodes' allow-lists only.
    pub web_acl_arn: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterAccess {
    /// A kubeconfig file and context (the zone-manager runs outside the cluster).
    #[default]
    Kubeconfig,
    /// The pod's own service account (the zone-manager runs in the cluster).
    InCluster,
}

impl ClusterConfig {
    /// Whether a zone at `location` (a GCP zone `us-central1-a`, an AWS availability zone
    /// `us-east-1a`) runs in this cluster.
    pub fn holds(&self, location: &str) -> bool {
        if self.zones.iter().any(|z| z == location) {
            return true;
        }
        match self.provider.as_str() {
            // `<region>-<letter>`
            "gcp" => location
                .strip_prefix(self.region.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|z| z.len() == 1 && z.chars().all(|c| c.is_ascii_lowercase())),
            // `<region><letter>`
            "aws" => location
                .strip_prefix(self.region.as_str())
                .is_some_and(|z| z.len() == 1 && z.chars().all(|c| c.is_ascii_lowercase())),
            _ => false,
        }
    }
}

impl ClusterConfig {
    /// The AWS cloud settings: ARNs of the right service and region, and what each needs.
    fn validate_aws(&self, name: &str) -> Result<(), ConfigError> {
        let key = |field: &str| format!("kubernetes.clusters.{name}.{field}");
        let arn = |field: &str, value: &str, service: &str, resource: &str| {
            if value.is_empty() {
                return Ok(());
            }
            let parts: Vec<&str> = value.splitn(6, ':').collect();
            let fits = parts.len() == 6
                && parts[0] == "arn"
                && parts[2] == service
                && parts[5].starts_with(resource);
            if !fits {
                return Err(ConfigError::invalid(
                    &key(field),
                    format!(
                        "{value:?} is not an ARN of the form arn:aws:{service}:<region>:<account>:{resource}…"
                    ),
                ));
            }
            if !self.region.is_empty() && parts[3] != self.region {
                return Err(ConfigError::invalid(
                    &key(field),
                    format!(
                        "is in region {:?}, not the cluster's region {:?}",
                        parts[3], self.region
                    ),
                ));
            }
            Ok(())
        };
        arn("listener_arn", &self.listener_arn, "elasticloadbalancing", "listener/app/")?;
        arn("web_acl_arn", &self.web_acl_arn, "wafv2", "regional/webacl/")?;
        if !self.listener_arn.is_empty() && !self.vpc_id.starts_with("vpc-") {
            return Err(ConfigError::invalid(
                &key("vpc_id"),
                format!(
                    "{:?} is not a VPC id (vpc-…); the placements' target groups of listener_arn are made in it",
                    self.vpc_id
                ),
            ));
        }
        if self.oidc_provider.starts_with("https://") || self.oidc_provider.contains(' ') {
            return Err(ConfigError::invalid(
                &key("oidc_provider"),
                format!(
                    "{:?}: give the issuer without https:// (oidc.eks.<region>.amazonaws.com/id/…)",
                    self.oidc_provider
                ),
            ));
        }
        if !self.oidc_provider.is_empty() && self.account_id.is_empty() {
            return Err(ConfigError::invalid(
                &key("account_id"),
                "is required with oidc_provider (the IAM roles' account)",
            ));
        }
        let account_ok =
            self.account_id.len() == 12 && self.account_id.chars().all(|c| c.is_ascii_digit());
        if !self.account_id.is_empty() && !account_ok {
            return Err(ConfigError::invalid(
                &key("account_id"),
                format!("{:?} is not a 12-digit AWS account id", self.account_id),
            ));
        }
        Ok(())
    }
}

impl ClusterConfig {
    /// The GCP cloud settings: Compute resource names, and what each needs.
    fn validate_gcp(&self, name: &str) -> Result<(), ConfigError> {
        let key = |field: &str| format!("kubernetes.clusters.{name}.{field}");
        for (field, value) in [("url_map", &self.url_map), ("path_matcher", &self.path_matcher)] {
            let fits = value.len() <= 63
                && value.starts_with(|c: char| c.is_ascii_lowercase())
                && value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !value.ends_with('-');
            if !value.is_empty() && !fits {
                return Err(ConfigError::invalid(
                    &key(field),
                    format!(
                        "{value:?} is not a Compute resource name (lowercase letters, digits and -, \
                         starting with a letter, at most 63); give the name, not a URL"
                    ),
                ));
            }
        }
        if !self.path_matcher.is_empty() && self.url_map.is_empty() {
            return Err(ConfigError::invalid(&key("url_map"), "is required with path_matcher"));
        }
        if !self.url_map.is_empty() && self.project.is_empty() {
            return Err(ConfigError::invalid(
                &key("project"),
                "is required with url_map (the project of the load balancer and the service accounts)",
            ));
        }
        Ok(())
    }
}

impl KubernetesConfig {
    /// The cluster (name and settings) a zone of `provider` at `location` runs in.
    pub fn cluster_for(&self, provider: &str, location: &str) -> Option<(&str, &ClusterConfig)> {
        self.clusters
            .iter()
            .find(|(_, c)| c.provider == provider && c.holds(location))
            .map(|(name, c)| (name.as_str(), c))
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        for (name, cluster) in &self.clusters {
            let key = |field: &str| format!("kubernetes.clusters.{name}.{field}");
            if !matches!(cluster.provider.as_str(), "gcp" | "aws") {
                return Err(ConfigError::invalid(
                    &key("provider"),
                    format!("must be `gcp` or `aws`, not {:?}", cluster.provider),
                ));
            }
            if cluster.region.is_empty() && cluster.zones.is_empty() {
                return Err(ConfigError::invalid(
                    &key("region"),
                    "is required (the cluster's region, e.g. us-central1)",
                ));
            }
            if cluster.provider == "aws" {
                cluster.validate_aws(name)?;
            }
            if cluster.provider == "gcp" {
                cluster.validate_gcp(name)?;
            }
            if cluster.access == ClusterAccess::InCluster
                && !(cluster.kubeconfig.is_empty() && cluster.context.is_empty())
            {
                return Err(ConfigError::invalid(
                    &key("access"),
                    "`in-cluster` uses the pod's service account; remove kubeconfig and context",
                ));
            }
        }
        // Two clusters must not claim one location: a zone would land in either.
        for (a, first) in &self.clusters {
            for (b, second) in self.clusters.range::<String, _>((
                std::ops::Bound::Excluded(a.clone()),
                std::ops::Bound::Unbounded,
            )) {
                let same = first.provider == second.provider
                    && (first.region == second.region && !first.region.is_empty()
                        || first.zones.iter().any(|z| second.holds(z))
                        || second.zones.iter().any(|z| first.holds(z)));
                if same {
                    return Err(ConfigError::invalid(
                        &format!("kubernetes.clusters.{b}.region"),
                        format!("claims the same locations as cluster `{a}`"),
                    ));
                }
            }
        }
        if !self.clusters.is_empty() && self.worker_image.is_empty() {
            return Err(ConfigError::invalid("kubernetes.worker_image", "must not be empty"));
        }
        if !matches!(self.image_pull_policy.as_str(), "IfNotPresent" | "Always" | "Never") {
            return Err(ConfigError::invalid(
                "kubernetes.image_pull_policy",
                format!("must be IfNotPresent, Always or Never, not {:?}", self.image_pull_policy),
            ));
        }
        if self.control_plane_namespace.is_empty() {
            return Err(ConfigError::invalid("kubernetes.control_plane_namespace", "is required"));
        }
        for (field, list) in
            [("egress_cidrs", &self.egress_cidrs), ("trusted_proxies", &self.trusted_proxies)]
        {
            for cidr in list {
                if cidr.parse::<ipnet::IpNet>().is_err() {
                    return Err(ConfigError::invalid(
                        &format!("kubernetes.{field}"),
                        format!("{cidr:?} is not a CIDR (like 10.0.0.0/8)"),
                    ));
                }
            }
        }
        if self.egress_ports.contains(&0) {
            return Err(ConfigError::invalid("kubernetes.egress_ports", "0 is not a port"));
        }
        if self.poll_interval < Duration::from_millis(50) {
            return Err(ConfigError::invalid("kubernetes.poll_interval", "must be at least 50ms"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(provider: &str, region: &str) -> ClusterConfig {
        ClusterConfig { provider: provider.into(), region: region.into(), ..Default::default() }
    }

    #[test]
    fn a_regional_cluster_holds_its_zones_and_no_others() {
        let gke = cluster("gcp", "us-central1");
        assert!(gke.holds("us-central1-a") && gke.holds("us-central1-f"));
        assert!(!gke.holds("us-central1") && !gke.holds("us-central10-a"));
        assert!(!gke.holds("us-central1-ab"));
        let eks = cluster("aws", "us-east-1");
        assert!(eks.holds("us-east-1a") && !eks.holds("us-east-1-a") && !eks.holds("us-east-12"));
        let zonal = ClusterConfig { zones: vec!["europe-west4-b".into()], ..gke.clone() };
        assert!(zonal.holds("europe-west4-b") && zonal.holds("us-central1-c"));
    }

    #[test]
    fn clusters_are_found_by_provider_and_location() {
        let mut config = KubernetesConfig::default();
        config.clusters.insert("gke".into(), cluster("gcp", "us-central1"));
        config.clusters.insert("eks".into(), cluster("aws", "us-east-1"));
        assert_eq!(config.cluster_for("gcp", "us-central1-b").map(|c| c.0), Some("gke"));
        assert_eq!(config.cluster_for("aws", "us-east-1c").map(|c| c.0), Some("eks"));
        assert!(config.cluster_for("aws", "us-central1-b").is_none());
        config.validate().unwrap();
    }

    #[test]
    fn bad_settings_name_their_key() {
        let check = |edit: &dyn Fn(&mut KubernetesConfig)| {
            let mut config = KubernetesConfig::default();
            config.clusters.insert("one".into(), cluster("gcp", "us-central1"));
            edit(&mut config);
            config.validate().unwrap_err().to_string()
        };
        let err = check(&|c| c.clusters.get_mut("one").unwrap().provider = "azure".into());
        assert!(err.contains("kubernetes.clusters.one.provider"), "{err}");
        let err = check(&|c| c.clusters.get_mut("one").unwrap().region.clear());
        assert!(err.contains("kubernetes.clusters.one.region"), "{err}");
        let aws = |edit: &dyn Fn(&mut ClusterConfig)| {
            check(&|c| {
                let one = c.clusters.get_mut("one").unwrap();
                *one = cluster("aws", "us-east-1");
                edit(one);
            })
        };
        let err = aws(&|c| {
            c.listener_arn =
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/x/1".into()
        });
        assert!(
            err.contains("kubernetes.clusters.one.listener_arn") && err.contains("listener/app/"),
            "{err}"
        );
        let err = aws(&|c| {
            c.listener_arn =
                "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/x/1/2".into()
        });
        assert!(err.contains("listener_arn") && err.contains("eu-west-1"), "{err}");
        let err = aws(&|c| {
            c.listener_arn =
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/x/1/2".into()
        });
        assert!(err.contains("kubernetes.clusters.one.vpc_id"), "{err}");
        let err = aws(&|c| {
            c.web_acl_arn = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/1".into()
        });
        assert!(err.contains("kubernetes.clusters.one.web_acl_arn"), "{err}");
        let err =
            aws(&|c| c.oidc_provider = "https://oidc.eks.us-east-1.amazonaws.com/id/X".into());
        assert!(err.contains("kubernetes.clusters.one.oidc_provider"), "{err}");
        let err = aws(&|c| c.oidc_provider = "oidc.eks.us-east-1.amazonaws.com/id/X".into());
        assert!(err.contains("kubernetes.clusters.one.account_id"), "{err}");
        let err = aws(&|c| c.account_id = "12345".into());
        assert!(err.contains("12-digit"), "{err}");
        let gcp = |edit: &dyn Fn(&mut ClusterConfig)| {
            check(&|c| edit(c.clusters.get_mut("one").unwrap()))
        };
        let err = gcp(&|c| {
            c.project = "acme".into();
            c.url_map =
                "https://www.googleapis.com/compute/v1/projects/acme/global/urlMaps/mcp".into();
        });
        assert!(
            err.contains("kubernetes.clusters.one.url_map") && err.contains("not a URL"),
            "{err}"
        );
        let err = gcp(&|c| c.url_map = "mcp".into());
        assert!(err.contains("kubernetes.clusters.one.project"), "{err}");
        let err = gcp(&|c| c.path_matcher = "ramen".into());
        assert!(err.contains("kubernetes.clusters.one.url_map"), "{err}");
        let err = check(&|c| {
            c.clusters.insert("two".into(), cluster("gcp", "us-central1"));
        });
        assert!(err.contains("kubernetes.clusters.two.region") && err.contains("`one`"), "{err}");
        let err = check(&|c| {
            let one = c.clusters.get_mut("one").unwrap();
            one.access = ClusterAccess::InCluster;
            one.context = "x".into();
        });
        assert!(err.contains("kubernetes.clusters.one.access"), "{err}");
        let err = check(&|c| c.egress_cidrs = vec!["10.0.0.0/33".into()]);
        assert!(err.contains("kubernetes.egress_cidrs") && err.contains("10.0.0.0/33"), "{err}");
        let err = check(&|c| c.image_pull_policy = "Sometimes".into());
        assert!(err.contains("kubernetes.image_pull_policy"), "{err}");
        let err = check(&|c| c.worker_image.clear());
        assert!(err.contains("kubernetes.worker_image"), "{err}");
    }
}
