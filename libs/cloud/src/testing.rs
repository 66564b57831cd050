//! A moto scene for the tests of AWS zones' cloud resources (feature `test-util`; GCP's
//! stand-in is [`gcp`]): what an
//! operator provides (VPC, ALB, listener, a web ACL with a rule of its own) made through the
//! real SDKs, and readers of every resource ramen makes.

pub mod gcp;

use std::sync::Arc;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, FixedResponseActionConfig, ProtocolEnum, Rule,
};
use aws_sdk_iam::config::Credentials;
use aws_sdk_wafv2::types::{
    AllowAction, CountryCode, DefaultAction, GeoMatchStatement, RuleAction, Scope, Statement,
    VisibilityConfig,
};
use ramen_config::ClusterConfig;
use ramen_testkit::Moto;

use crate::aws::{AwsCloud, AwsCloudSettings};
use crate::{PlacementRef, ZoneCloud};

pub const ACCOUNT: &str = "123456789012";
/// The platform's bucket in the scene (nothing is stored in it: the roles name it).
pub const BUCKET: &str = "ramen-blobs";
pub const OIDC: &str = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE";

pub struct Scene {
    pub moto: Moto,
    /// An EKS cluster in us-east-1 with every cloud setting: account, OIDC provider, VPC,
    /// the shared listener and web ACL.
    pub cluster: ClusterConfig,
    pub iam: aws_sdk_iam::Client,
    pub elb: aws_sdk_elasticloadbalancingv2::Client,
    pub waf: aws_sdk_wafv2::Client,
}

impl Scene {
    pub async fn start() -> Self {
        let moto = Moto::start().await.expect("moto_server starts");
        let shared = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .endpoint_url(moto.endpoint())
            .load()
            .await;
        let iam = aws_sdk_iam::Client::new(&shared);
        let elb = aws_sdk_elasticloadbalancingv2::Client::new(&shared);
        let waf = aws_sdk_wafv2::Client::new(&shared);
        let vpc = moto
            .ec2(&[("Action", "CreateVpc"), ("CidrBlock", "10.0.0.0/16")], "vpcId")
            .await
            .unwrap();
        let mut subnets = Vec::new();
        for (cidr, az) in [("10.0.1.0/24", "us-east-1a"), ("10.0.2.0/24", "us-east-1b")] {
            let params = [
                ("Action", "CreateSubnet"),
                ("VpcId", &vpc),
                ("CidrBlock", cidr),
                ("AvailabilityZone", az),
            ];
            subnets.push(moto.ec2(&params, "subnetId").await.unwrap());
        }
        let alb = elb
            .create_load_balancer()
            .name("shared")
            .set_subnets(Some(subnets))
            .send()
            .await
            .unwrap();
        let alb = alb.load_balancers()[0].load_balancer_arn().unwrap().to_owned();
        let not_found = FixedResponseActionConfig::builder()
            .status_code("404")
            .content_type("text/plain")
            .build();
        let default = Action::builder()
            .r#type(ActionTypeEnum::FixedResponse)
            .fixed_response_config(not_found)
            .build();
        let listener = elb
            .create_listener()
            .load_balancer_arn(&alb)
            .protocol(ProtocolEnum::Http)
            .port(80)
            .default_actions(default)
            .send()
            .await
            .unwrap();
        let listener = listener.listeners()[0].listener_arn().unwrap().to_owned();
        // The operator's web ACL, with a rule of its own that ramen must keep.
        let visibility = |name: &str| {
            VisibilityConfig::builder()
                .sampled_requests_enabled(false)
                .cloud_watch_metrics_enabled(false)
                .metric_name(name)
                .build()
                .unwrap()
        };
        let operator_rule = aws_sdk_wafv2::types::Rule::builder()
            .name("operator-allow-home")
            .priority(1)
            .statement(
                Statement::builder()
                    .geo_match_statement(
                        GeoMatchStatement::builder().country_codes(CountryCode::Nl).build(),
                    )
                    .build(),
            )
            .action(RuleAction::builder().allow(AllowAction::builder().build()).build())
            .visibility_config(visibility("operator"))
            .build()
            .unwrap();
        let acl = waf
            .create_web_acl()
            .name("edge")
            .scope(Scope::Regional)
            .default_action(DefaultAction::builder().allow(AllowAction::builder().build()).build())
            .rules(operator_rule)
            .visibility_config(visibility("edge"))
            .send()
            .await
            .unwrap();
        let acl = acl.summary().unwrap().arn().unwrap().to_owned();
        waf.associate_web_acl().web_acl_arn(&acl).resource_arn(&alb).send().await.unwrap();
        let cluster = ClusterConfig {
            provider: "aws".into(),
            region: "us-east-1".into(),
            account_id: ACCOUNT.into(),
            oidc_provider: OIDC.into(),
            vpc_id: vpc,
            listener_arn: listener,
            web_acl_arn: acl,
            ..ClusterConfig::default()
        };
        Self { moto, cluster, iam, elb, waf }
    }

    /// The adapter under test, on the scene's moto.
    pub fn cloud(&self) -> AwsCloud {
        AwsCloud::new(AwsCloudSettings {
            endpoint: self.moto.endpoint(),
            bucket: BUCKET.into(),
            static_keys: Some(("test".into(), "test".into())),
            // Short: the fault tests freeze moto and wait these out.
            attempt_timeout: std::time::Duration::from_secs(1),
            call_timeout: std::time::Duration::from_secs(3),
        })
    }

    /// An `Arc<dyn ZoneCloud>` of [`cloud`](Self::cloud), for a zone-manager.
    pub fn shared_cloud(&self) -> Arc<dyn ZoneCloud> {
        Arc::new(self.cloud())
    }

    pub fn placement<'a>(
        &'a self,
        group: &'a str,
        zone: &'a str,
        namespace: &'a str,
    ) -> PlacementRef<'a> {
        PlacementRef {
            group,
            zone,
            namespace,
            location: "us-east-1a",
            service_account: "ramen-worker",
            cluster: &self.cluster,
            port: 8000,
        }
    }

    /// The listener's rules but its default.
    pub async fn rules(&self) -> Vec<Rule> {
        let rules = self
            .elb
            .describe_rules()
            .listener_arn(&self.cluster.listener_arn)
            .send()
            .await
            .unwrap();
        rules.rules().iter().filter(|r| !r.is_default().unwrap_or(false)).cloned().collect()
    }

    /// (name, ARN) of every target group.
    pub async fn target_groups(&self) -> Vec<(String, String)> {
        let groups = self.elb.describe_target_groups().send().await.unwrap();
        groups
            .target_groups()
            .iter()
            .map(|g| {
                (
                    g.target_group_name().unwrap().to_owned(),
                    g.target_group_arn().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// The registered target ids (IPs) of a target group, sorted.
    pub async fn targets(&self, arn: &str) -> Vec<String> {
        let health = self.elb.describe_target_health().target_group_arn(arn).send().await.unwrap();
        let mut ids: Vec<String> = health
            .target_health_descriptions()
            .iter()
            .map(|d| d.target().unwrap().id().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    }

    /// The rules of the shared web ACL.
    pub async fn acl_rules(&self) -> Vec<aws_sdk_wafv2::types::Rule> {
        let (name, id) = crate::names::web_acl_name_id(&self.cluster.web_acl_arn).unwrap();
        let acl =
            self.waf.get_web_acl().name(name).id(id).scope(Scope::Regional).send().await.unwrap();
        acl.web_acl().unwrap().rules().to_vec()
    }

    /// (name, sorted addresses) of every regional IP set.
    pub async fn ip_sets(&self) -> Vec<(String, Vec<String>)> {
        let listed = self.waf.list_ip_sets().scope(Scope::Regional).send().await.unwrap();
        let mut sets = Vec::new();
        for summary in listed.ip_sets() {
            let name = summary.name().unwrap();
            let set = self
                .waf
                .get_ip_set()
                .name(name)
                .id(summary.id().unwrap())
                .scope(Scope::Regional)
                .send()
                .await
                .unwrap();
            let mut addresses = set.ip_set().unwrap().addresses().to_vec();
            addresses.sort();
            sets.push((name.to_owned(), addresses));
        }
        sets.sort();
        sets
    }

    /// The role's `ramen-group-rules` policy document, decoded (IAM answers it URL-encoded).
    pub async fn role_policy(&self, role: &str) -> Result<String, String> {
        self.inline_policy(role, crate::aws::POLICY_NAME).await
    }

    /// A role's inline policy `name`, decoded.
    pub async fn inline_policy(&self, role: &str, name: &str) -> Result<String, String> {
        let policy = self.iam.get_role_policy().role_name(role).policy_name(name).send().await;
        Ok(url_decode(
            policy
                .map_err(|e| format!("{}", aws_sdk_iam::error::DisplayErrorContext(e)))?
                .policy_document(),
        ))
    }

    /// A role's permissions boundary: its ARN and the policy's default version, decoded.
    pub async fn boundary(&self, role: &str) -> Option<(String, serde_json::Value)> {
        let found = self.iam.get_role().role_name(role).send().await.ok()?;
        let arn = found.role()?.permissions_boundary()?.permissions_boundary_arn()?.to_owned();
        let policy = self.iam.get_policy().policy_arn(&arn).send().await.ok()?;
        let version = policy.policy()?.default_version_id()?.to_owned();
        let got = self.iam.get_policy_version().policy_arn(&arn).version_id(version);
        let got = got.send().await.ok()?;
        let document = url_decode(got.policy_version()?.document()?);
        Some((arn, serde_json::from_str(&document).ok()?))
    }

    /// Whether the managed policy `arn` exists.
    pub async fn policy_exists(&self, arn: &str) -> bool {
        self.iam.get_policy().policy_arn(arn).send().await.is_ok()
    }

    /// Names of every IAM role.
    pub async fn roles(&self) -> Vec<String> {
        let roles = self.iam.list_roles().send().await.unwrap();
        roles.roles().iter().map(|r| r.role_name().to_owned()).collect()
    }
}

/// The target groups of a rule's forward action, with their weights.
pub fn forwarded(rule: &Rule) -> Vec<(String, i32)> {
    rule.actions()
        .iter()
        .filter_map(|a| a.forward_config())
        .flat_map(|f| f.target_groups())
        .map(|t| (t.target_group_arn().unwrap().to_owned(), t.weight().unwrap_or(1)))
        .collect()
}

/// `name=values` of a rule's header condition.
pub fn header_of(rule: &Rule) -> Option<String> {
    rule.conditions()
        .iter()
        .find(|c| c.field() == Some("http-header"))
        .and_then(|c| c.http_header_config())
        .map(|h| format!("{}={}", h.http_header_name().unwrap(), h.values().join(",")))
}

pub use crate::aws::url_decode;
