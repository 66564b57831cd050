//! The AWS cloud resources of EKS zones against `moto_server`: the test sets the scene an
//! operator provides (VPC, ALB, listener, web ACL with a rule of its own) through the real
//! SDKs, drives [`AwsCloud`], and reads every resource back through the same APIs.

use std::net::IpAddr;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, FixedResponseActionConfig, ProtocolEnum, Rule,
};
use aws_sdk_iam::config::Credentials;
use aws_sdk_wafv2::types::{
    AllowAction, CountryCode, DefaultAction, GeoMatchStatement, RuleAction, Scope, Statement,
    VisibilityConfig,
};
use ipnet::IpNet;
use ramen_cloud::aws::{AwsCloud, AwsCloudSettings};
use ramen_cloud::{CloudError, EdgeRule, Grant, Outcome, PlacementRef, ZoneCloud};
use ramen_config::ClusterConfig;
use ramen_testkit::Moto;

const ACCOUNT: &str = "123456789012";
const OIDC: &str = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE";

struct Scene {
    moto: Moto,
    cluster: ClusterConfig,
    iam: aws_sdk_iam::Client,
    elb: aws_sdk_elasticloadbalancingv2::Client,
    waf: aws_sdk_wafv2::Client,
}

impl Scene {
    async fn start() -> Self {
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

    fn cloud(&self) -> AwsCloud {
        AwsCloud::new(AwsCloudSettings {
            endpoint: self.moto.endpoint(),
            static_keys: Some(("test".into(), "test".into())),
        })
    }

    fn placement<'a>(
        &'a self,
        group: &'a str,
        zone: &'a str,
        namespace: &'a str,
    ) -> PlacementRef<'a> {
        PlacementRef {
            group,
            zone,
            namespace,
            service_account: "ramen-worker",
            cluster: &self.cluster,
            port: 8000,
        }
    }

    async fn rules(&self) -> Vec<Rule> {
        let rules = self
            .elb
            .describe_rules()
            .listener_arn(&self.cluster.listener_arn)
            .send()
            .await
            .unwrap();
        rules.rules().iter().filter(|r| !r.is_default().unwrap_or(false)).cloned().collect()
    }

    async fn target_groups(&self) -> Vec<(String, String)> {
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

    async fn targets(&self, arn: &str) -> Vec<String> {
        let health = self.elb.describe_target_health().target_group_arn(arn).send().await.unwrap();
        let mut ids: Vec<String> = health
            .target_health_descriptions()
            .iter()
            .map(|d| d.target().unwrap().id().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    }

    async fn acl_rules(&self) -> Vec<aws_sdk_wafv2::types::Rule> {
        let (name, id) = ramen_cloud::names::web_acl_name_id(&self.cluster.web_acl_arn).unwrap();
        let acl =
            self.waf.get_web_acl().name(name).id(id).scope(Scope::Regional).send().await.unwrap();
        acl.web_acl().unwrap().rules().to_vec()
    }

    async fn ip_sets(&self) -> Vec<(String, Vec<String>)> {
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

    async fn roles(&self) -> Vec<String> {
        let roles = self.iam.list_roles().send().await.unwrap();
        roles.roles().iter().map(|r| r.role_name().to_owned()).collect()
    }
}

/// The target groups of a rule's forward action, with their weights.
fn forwarded(rule: &Rule) -> Vec<(String, i32)> {
    rule.actions()
        .iter()
        .filter_map(|a| a.forward_config())
        .flat_map(|f| f.target_groups())
        .map(|t| (t.target_group_arn().unwrap().to_owned(), t.weight().unwrap_or(1)))
        .collect()
}

fn header_of(rule: &Rule) -> Option<String> {
    rule.conditions()
        .iter()
        .find(|c| c.field() == Some("http-header"))
        .and_then(|c| c.http_header_config())
        .map(|h| format!("{}={}", h.http_header_name().unwrap(), h.values().join(",")))
}

fn nets(list: &[&str]) -> Vec<IpNet> {
    list.iter().map(|n| n.parse().unwrap()).collect()
}

#[tokio::test]
async fn two_zones_get_roles_routes_and_one_edge_rule_and_teardown_leaves_nothing() {
    let scene = Scene::start().await;
    let cloud = scene.cloud();
    let a = scene.placement("team", "aws-a", "ramen-team-aws-a");
    let b = scene.placement("team", "aws-b", "ramen-team-aws-b");

    // Identity: a role per placement, trusted only by its namespace's ServiceAccount.
    let grants = [Grant {
        permissions: vec!["s3:GetObject".into()],
        resources: vec!["arn:aws:s3:::team-data/*".into()],
    }];
    let made = cloud.ensure_identity(&a, &grants).await.unwrap();
    assert_eq!(made.resources, [format!("arn:aws:iam::{ACCOUNT}:role/ramen-team-aws-a")]);
    cloud.ensure_identity(&b, &[]).await.unwrap();
    let role = scene.iam.get_role().role_name("ramen-team-aws-a").send().await.unwrap();
    let trust = urlencoding_decode(role.role().unwrap().assume_role_policy_document().unwrap());
    assert!(trust.contains("system:serviceaccount:ramen-team-aws-a:ramen-worker"), "{trust}");
    assert!(
        trust.contains(&format!("oidc-provider/{OIDC}")) && trust.contains("sts.amazonaws.com"),
        "{trust}"
    );
    let policy = scene
        .iam
        .get_role_policy()
        .role_name("ramen-team-aws-a")
        .policy_name("ramen-group-rules")
        .send()
        .await
        .unwrap();
    let policy = urlencoding_decode(policy.policy_document());
    assert!(policy.contains("s3:GetObject") && policy.contains("team-data"), "{policy}");
    // Changed rules replace the policy; no rules leave none (and only those).
    let fewer = [Grant { permissions: vec!["sqs:SendMessage".into()], resources: vec![] }];
    cloud.ensure_identity(&a, &fewer).await.unwrap();
    let policy = scene
        .iam
        .get_role_policy()
        .role_name("ramen-team-aws-a")
        .policy_name("ramen-group-rules")
        .send()
        .await
        .unwrap();
    let policy = urlencoding_decode(policy.policy_document());
    assert!(
        policy.contains("sqs:SendMessage")
            && !policy.contains("s3:GetObject")
            && policy.contains("\"*\""),
        "{policy}"
    );
    let listed = scene.iam.list_role_policies().role_name("ramen-team-aws-b").send().await.unwrap();
    assert!(listed.policy_names().is_empty(), "{:?}", listed.policy_names());

    // Route: a target group per zone, a zone rule each, one weighted rule over both.
    cloud.ensure_route(&a).await.unwrap();
    let made = cloud.ensure_route(&b).await.unwrap();
    assert!(made.note.contains("joined the group's weighted rule"), "{}", made.note);
    let again = cloud.ensure_route(&b).await.unwrap();
    assert_eq!(again.note, "route in place");
    let groups = scene.target_groups().await;
    let arn =
        |name: &str| groups.iter().find(|(n, _)| n == name).map(|(_, a)| a.clone()).expect(name);
    let (tg_a, tg_b) = (arn("ramen-team-aws-a"), arn("ramen-team-aws-b"));
    let rules = scene.rules().await;
    assert_eq!(rules.len(), 3, "two zone rules and the weighted one: {rules:#?}");
    let zone_rule = |zone: &str| {
        rules
            .iter()
            .find(|r| header_of(r).as_deref() == Some(&format!("ramen-zone={zone}")[..]))
            .unwrap_or_else(|| panic!("zone rule of {zone}"))
    };
    assert_eq!(forwarded(zone_rule("aws-a")), [(tg_a.clone(), 1)]);
    assert_eq!(forwarded(zone_rule("aws-b")), [(tg_b.clone(), 1)]);
    let weighted = rules.iter().find(|r| header_of(r).is_none()).unwrap();
    assert_eq!(forwarded(weighted), [(tg_a.clone(), 100), (tg_b.clone(), 100)]);
    let priority = |r: &Rule| r.priority().unwrap().parse::<i32>().unwrap();
    assert!(
        priority(zone_rule("aws-a")) < priority(weighted)
            && priority(zone_rule("aws-b")) < priority(weighted)
    );

    // Targets follow the serving workers exactly.
    let ips: Vec<IpAddr> = ["10.0.1.5", "10.0.1.6"].iter().map(|ip| ip.parse().unwrap()).collect();
    cloud.sync_targets(&a, &ips).await.unwrap();
    assert_eq!(scene.targets(&tg_a).await, ["10.0.1.5", "10.0.1.6"]);
    let made = cloud.sync_targets(&a, &ips[1..]).await.unwrap();
    assert_eq!(made.note, "1 target(s) registered, 0 added, 1 removed");
    assert_eq!(scene.targets(&tg_a).await, ["10.0.1.6"]);

    // Edge rule: one per group, the union of its zones' lists, beside the operator's rule.
    let allowed = nets(&["10.0.0.0/8", "203.0.113.0/24", "2001:db8::/32"]);
    cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Only(&allowed)).await.unwrap();
    assert_eq!(
        scene.ip_sets().await,
        [
            (
                "ramen-team-ipv4".to_owned(),
                vec!["10.0.0.0/8".to_owned(), "203.0.113.0/24".to_owned()]
            ),
            ("ramen-team-ipv6".to_owned(), vec!["2001:db8::/32".to_owned()]),
        ]
    );
    let acl = scene.acl_rules().await;
    let names: Vec<&str> = acl.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["operator-allow-home", "ramen-team"]);
    let ours = format!("{:?}", acl[1].statement());
    // Debug prints the search strings as hex: `/mcp/team` exactly and `/mcp/team/` as a prefix.
    assert!(
        ours.contains("2f6d63702f7465616d }") && ours.contains("2f6d63702f7465616d2f }"),
        "{ours}"
    );
    assert!(
        ours.contains("ramen-team-ipv6") && acl[1].action().unwrap().block().is_some(),
        "{ours}"
    );
    // Narrowing one family updates the set in place; the rule stays.
    let narrower = nets(&["10.0.0.0/8"]);
    cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Only(&narrower)).await.unwrap();
    let sets = scene.ip_sets().await;
    assert_eq!(sets[0].1, ["10.0.0.0/8"]);
    assert!(sets[1].1.is_empty(), "{sets:?}");
    let ours = format!("{:?}", scene.acl_rules().await[1].statement());
    assert!(
        !ours.contains("ramen-team-ipv6"),
        "an empty family is not allowed by reference: {ours}"
    );
    // Everyone allowed: no rule at all; the operator's stays.
    cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Everyone).await.unwrap();
    let names: Vec<String> = scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(names, ["operator-allow-home"]);

    // Teardown of one zone leaves the group's weighted rule to the other.
    cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Only(&narrower)).await.unwrap();
    assert!(matches!(cloud.remove_route(&a).await.unwrap(), Outcome::Done(_)));
    let rules = scene.rules().await;
    assert_eq!(rules.len(), 2, "{rules:#?}");
    let weighted = rules.iter().find(|r| header_of(r).is_none()).unwrap();
    assert_eq!(forwarded(weighted), [(tg_b.clone(), 100)]);
    assert!(!scene.target_groups().await.iter().any(|(n, _)| n == "ramen-team-aws-a"));
    // Again after a crash: nothing left to do, and it says so.
    let Outcome::Done(again) = cloud.remove_route(&a).await.unwrap() else { panic!() };
    assert!(again.contains("is gone"), "{again}");
    // The last zone: everything of the group goes.
    cloud.remove_route(&b).await.unwrap();
    cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Remove).await.unwrap();
    for placement in [&a, &b] {
        assert!(matches!(cloud.remove_identity(placement).await.unwrap(), Outcome::Done(_)));
    }
    assert!(scene.rules().await.is_empty());
    assert!(scene.target_groups().await.is_empty());
    assert!(scene.ip_sets().await.is_empty());
    let names: Vec<String> = scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(names, ["operator-allow-home"]);
    assert!(
        !scene.roles().await.iter().any(|r| r.starts_with("ramen-")),
        "{:?}",
        scene.roles().await
    );
}

#[tokio::test]
async fn concurrent_edge_rules_on_one_web_acl_are_each_kept() {
    let scene = Scene::start().await;
    // Separate clouds (as separate zone-manager replicas): nothing serialises them but WAF's
    // lock token, so a writer that read before another's write must read again.
    let groups = ["g1", "g2", "g3", "g4", "g5"];
    let clouds: Vec<AwsCloud> = groups.iter().map(|_| scene.cloud()).collect();
    let allowed = nets(&["10.0.0.0/8"]);
    let writes = groups.iter().zip(&clouds).map(|(group, cloud)| {
        let (allowed, cluster) = (&allowed, &scene.cluster);
        async move { cloud.set_edge_rule(group, cluster, EdgeRule::Only(allowed)).await }
    });
    for result in futures::future::join_all(writes).await {
        result.expect("each write lands");
    }
    let mut names: Vec<String> =
        scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        ["operator-allow-home", "ramen-g1", "ramen-g2", "ramen-g3", "ramen-g4", "ramen-g5"]
    );
    let priorities: std::collections::BTreeSet<i32> =
        scene.acl_rules().await.iter().map(|r| r.priority()).collect();
    assert_eq!(priorities.len(), 6, "every rule has its own priority");
}

#[tokio::test]
async fn resources_ramen_did_not_make_are_named_and_left_alone() {
    let scene = Scene::start().await;
    let cloud = scene.cloud();
    let a = scene.placement("team", "aws-a", "ramen-team-aws-a");
    scene
        .iam
        .create_role()
        .role_name("ramen-team-aws-a")
        .assume_role_policy_document("{}")
        .send()
        .await
        .unwrap();
    let err = cloud.ensure_identity(&a, &[]).await.unwrap_err();
    assert!(
        matches!(err, CloudError::NotOurs(_))
            && err
                .to_string()
                .contains("IAM role ramen-team-aws-a exists and ramen did not make it"),
        "{err}"
    );
    let Outcome::Done(note) = cloud.remove_identity(&a).await.unwrap() else { panic!() };
    assert!(note.contains("left alone"), "{note}");
    assert!(scene.roles().await.contains(&"ramen-team-aws-a".to_owned()));

    scene
        .elb
        .create_target_group()
        .name("ramen-team-aws-a")
        .protocol(ProtocolEnum::Http)
        .port(8000)
        .vpc_id(&scene.cluster.vpc_id)
        .send()
        .await
        .unwrap();
    let err = cloud.ensure_route(&a).await.unwrap_err();
    assert!(
        err.to_string().contains("target group ramen-team-aws-a exists and ramen did not make it"),
        "{err}"
    );
    assert!(scene.rules().await.is_empty(), "no rule made for a target group that is not ours");
}

#[tokio::test]
async fn an_unreachable_cloud_api_is_a_retryable_error_naming_the_call() {
    let mut scene = Scene::start().await;
    let cloud = scene.cloud();
    scene.moto.kill().await;
    let a = scene.placement("team", "aws-a", "ramen-team-aws-a");
    let err = cloud.ensure_identity(&a, &[]).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("IAM GetRole"), "{err}");
    let err = cloud.ensure_route(&a).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("ELBv2"), "{err}");
    let err = cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Remove).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("WAFv2"), "{err}");
}

/// IAM answers policy documents URL-encoded.
fn urlencoding_decode(text: &str) -> String {
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
