//! AWS (EKS zones): an IAM role per placement assumed through IRSA, a target group per
//! placement with the group's listener rules on the shared ALB, and a WAFv2 IP set per group
//! referenced by a rule of the shared web ACL.
//!
//! Choices, and why:
//! - **IRSA, not EKS Pod Identity**: IRSA needs only IAM and the cluster's OIDC provider
//!   (no agent add-on on every node, no EKS association API), works on every EKS version,
//!   and the ServiceAccount annotation that selects the role is already what the provider
//!   writes. The role's trust policy names exactly `system:serviceaccount:<ns>:<ksa>`.
//! - **Targets registered by ramen from the pods, not a `TargetGroupBinding`**: the
//!   zone-manager already reads every placement's pods and knows which serve (a ready stable
//!   worker, or the ready canary while stable has none, as the local edge does); registering
//!   them itself needs no AWS Load Balancer Controller in the cluster, no CRD and no second
//!   identity with ELBv2 rights inside it. The target set is re-synced after every rollout,
//!   scale and teardown step.

mod edge;
mod errors;
mod identity;
mod route;

pub use identity::{BLOB_POLICY_NAME, BOUNDARY_PATH, POLICY_NAME, boundary_name};

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_config::Region;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_iam::config::Credentials;
use parking_lot::Mutex;
use ramen_config::ClusterConfig;

use crate::{CloudError, EdgeRule, Grant, GroupLocks, Made, Outcome, PlacementRef, ZoneCloud};

#[derive(Clone, Debug)]
pub struct AwsCloudSettings {
    /// Empty = AWS (or `AWS_ENDPOINT_URL`); one endpoint for IAM, ELBv2 and WAFv2 (moto).
    pub endpoint: String,
    /// The platform's bucket (`s3.bucket`): each role may reach its group's prefix of it.
    /// Empty = none (a local blob directory).
    pub bucket: String,
    /// Static keys (a stand-in such as moto); `None` = the standard AWS chain.
    pub static_keys: Option<(String, String)>,
    /// One try of a call (the SDK retries a throttled or failed try within `call_timeout`).
    pub attempt_timeout: Duration,
    /// A call with its retries: past it the step fails as unavailable and is retried later,
    /// so an API that accepts connections and never answers cannot hold a placement's lock.
    pub call_timeout: Duration,
}

impl Default for AwsCloudSettings {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            bucket: String::new(),
            static_keys: None,
            attempt_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
        }
    }
}

/// The three clients of one region.
#[derive(Clone)]
pub(crate) struct Clients {
    pub iam: aws_sdk_iam::Client,
    pub elb: aws_sdk_elasticloadbalancingv2::Client,
    pub waf: aws_sdk_wafv2::Client,
}

pub struct AwsCloud {
    settings: AwsCloudSettings,
    clients: Mutex<HashMap<String, Clients>>,
    /// The group's weighted rule and its web ACL rule, one change at a time (another
    /// process's are caught by reading back, or by the lock token).
    groups: GroupLocks,
}

impl AwsCloud {
    pub fn new(settings: AwsCloudSettings) -> Self {
        Self { settings, clients: Mutex::default(), groups: GroupLocks::default() }
    }

    pub(crate) async fn clients(&self, cluster: &ClusterConfig) -> Result<Clients, CloudError> {
        let region = cluster.region.clone();
        if region.is_empty() {
            return Err(CloudError::NotConfigured(
                "the zone's cluster has no region (kubernetes.clusters.<name>.region)".into(),
            ));
        }
        if let Some(clients) = self.clients.lock().get(&region) {
            return Ok(clients.clone());
        }
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(5).min(self.settings.attempt_timeout))
            .operation_attempt_timeout(self.settings.attempt_timeout)
            .operation_timeout(self.settings.call_timeout)
            .build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(region.clone()))
            .timeout_config(timeouts);
        if let Some((id, secret)) = &self.settings.static_keys {
            loader =
                loader.credentials_provider(Credentials::new(id, secret, None, None, "static"));
        }
        if !self.settings.endpoint.is_empty() {
            loader = loader.endpoint_url(&self.settings.endpoint);
        }
        let shared = loader.load().await;
        let clients = Clients {
            iam: aws_sdk_iam::Client::new(&shared),
            elb: aws_sdk_elasticloadbalancingv2::Client::new(&shared),
            waf: aws_sdk_wafv2::Client::new(&shared),
        };
        self.clients.lock().insert(region, clients.clone());
        Ok(clients)
    }
}

#[async_trait]
impl ZoneCloud for AwsCloud {
    async fn ensure_identity(
        &self,
        placement: &PlacementRef<'_>,
        grants: &[Grant],
        bounds: &crate::ProviderBounds,
    ) -> Result<Made, CloudError> {
        let (grants, refused) =
            crate::within_bounds(ramen_grant_bounds::Provider::Aws, grants, bounds);
        let cluster = placement.cluster;
        if cluster.account_id.is_empty() || cluster.oidc_provider.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no IAM role: the cluster has no account_id and oidc_provider".into(),
            });
        }
        let clients = self.clients(cluster).await?;
        let made =
            identity::ensure(&clients.iam, placement, &grants, bounds, &self.settings.bucket)
                .await?;
        refused.map_or(Ok(made), Err)
    }

    async fn ensure_route(&self, placement: &PlacementRef<'_>) -> Result<Made, CloudError> {
        if placement.cluster.listener_arn.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no route: the cluster has no listener_arn".into(),
            });
        }
        let clients = self.clients(placement.cluster).await?;
        let lock = self.groups.of(placement.group);
        let _guard = lock.lock().await;
        route::ensure(&clients.elb, placement).await
    }

    async fn sync_targets(
        &self,
        placement: &PlacementRef<'_>,
        ips: &[IpAddr],
    ) -> Result<Made, CloudError> {
        if placement.cluster.listener_arn.is_empty() {
            return Ok(Made::default());
        }
        let clients = self.clients(placement.cluster).await?;
        route::sync_targets(&clients.elb, placement, ips).await
    }

    async fn set_edge_rule(
        &self,
        group: &str,
        cluster: &ClusterConfig,
        rule: EdgeRule<'_>,
    ) -> Result<Made, CloudError> {
        if cluster.web_acl_arn.is_empty() {
            return Ok(Made {
                resources: Vec::new(),
                note: "no edge rule: the cluster has no web_acl_arn (the nodes' allow-lists apply)"
                    .into(),
            });
        }
        let clients = self.clients(cluster).await?;
        let lock = self.groups.of(group);
        let _guard = lock.lock().await;
        edge::set(&clients.waf, group, cluster, rule).await
    }

    async fn remove_route(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
        if placement.cluster.listener_arn.is_empty() {
            return Ok(Outcome::Done("no route was made (no listener_arn)".into()));
        }
        let clients = self.clients(placement.cluster).await?;
        let lock = self.groups.of(placement.group);
        let _guard = lock.lock().await;
        route::remove(&clients.elb, placement).await
    }

    async fn remove_identity(&self, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
        if placement.cluster.account_id.is_empty() || placement.cluster.oidc_provider.is_empty() {
            return Ok(Outcome::Done("no IAM role was made".into()));
        }
        let clients = self.clients(placement.cluster).await?;
        identity::remove(&clients.iam, placement).await
    }
}

/// IAM answers policy documents URL-encoded.
pub fn url_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
