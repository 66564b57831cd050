//! The AWS balancer against `moto_server`: the test builds the load balancer, its listener and
//! the target groups through the real ELBv2 API, rebalances, and reads the weights back.

use std::time::Duration;

use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, ForwardActionConfig, ProtocolEnum, Tag, TargetGroupTuple,
};
use ramen_proto::rebalancer::v1 as pb;
use ramen_rebalancer::lb::{AwsSettings, GROUP_TAG, ZONE_TAG};
use ramen_rebalancer::model::Provider;
use ramen_testkit::{Moto, eventually};

use crate::support::{Harness, StaticZones, node};

fn client(moto: &Moto) -> Client {
    let config = aws_sdk_elasticloadbalancingv2::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(moto.endpoint())
        .build();
    Client::from_conf(config)
}

/// EC2 for the network the load balancer needs (the ELBv2 SDK is the client under test).
async fn ec2(moto: &Moto, params: &[(&str, &str)], field: &str) -> String {
    moto.ec2(params, field).await.expect("moto answers EC2")
}

fn tags(group: &str, zone: &str) -> [Tag; 2] {
    [
        Tag::builder().key(GROUP_TAG).value(group).build(),
        Tag::builder().key(ZONE_TAG).value(zone).build(),
    ]
}

/// A load balancer whose listener forwards 1:1:1 to aws-a, aws-b and an untagged group.
async fn scene(moto: &Moto, elb: &Client) -> (String, [String; 3]) {
    let vpc = ec2(moto, &[("Action", "CreateVpc"), ("CidrBlock", "10.0.0.0/16")], "vpcId").await;
    let mut subnets = Vec::new();
    for (cidr, az) in [("10.0.1.0/24", "us-east-1a"), ("10.0.2.0/24", "us-east-1b")] {
        let params = [
            ("Action", "CreateSubnet"),
            ("VpcId", vpc.as_str()),
            ("CidrBlock", cidr),
            ("AvailabilityZone", az),
        ];
        subnets.push(ec2(moto, &params, "subnetId").await);
    }
    let lb = elb
        .create_load_balancer()
        .name("ramen-team")
        .set_subnets(Some(subnets))
        .send()
        .await
        .unwrap();
    let lb_arn = lb.load_balancers()[0].load_balancer_arn().unwrap().to_owned();
    let mut arns = Vec::new();
    for (name, zone) in
        [("ramen-team-aws-a", Some("aws-a")), ("ramen-team-aws-b", Some("aws-b")), ("legacy", None)]
    {
        let mut create = elb
            .create_target_group()
            .name(name)
            .protocol(ProtocolEnum::Http)
            .port(8000)
            .vpc_id(&vpc);
        if let Some(zone) = zone {
            create = create.set_tags(Some(tags("team", zone).to_vec()));
        }
        arns.push(
            create.send().await.unwrap().target_groups()[0].target_group_arn().unwrap().to_owned(),
        );
    }
    let tuples =
        arns.iter().map(|arn| TargetGroupTuple::builder().target_group_arn(arn).weight(1).build());
    let forward = ForwardActionConfig::builder().set_target_groups(Some(tuples.collect())).build();
    let action = Action::builder().r#type(ActionTypeEnum::Forward).forward_config(forward).build();
    let listener = elb
        .create_listener()
        .load_balancer_arn(&lb_arn)
        .protocol(ProtocolEnum::Http)
        .port(80)
        .default_actions(action)
        .send()
        .await
        .unwrap();
    let listener = listener.listeners()[0].listener_arn().unwrap().to_owned();
    (listener, arns.try_into().unwrap())
}

async fn weights(elb: &Client, listener: &str) -> Vec<(String, i32)> {
    let described = elb.describe_listeners().listener_arns(listener).send().await.unwrap();
    let action = &described.listeners()[0].default_actions()[0];
    let forward = action.forward_config().unwrap().target_groups();
    forward
        .iter()
        .map(|t| (t.target_group_arn().unwrap().to_owned(), t.weight().unwrap_or_default()))
        .collect()
}

/// A rebalancer whose AWS balancer uses `moto`, and a wait until `live` cells report.
async fn aws_harness(zones: std::sync::Arc<StaticZones>, endpoint: String) -> Harness {
    Harness::start(zones, move |_, ports| {
        ports.aws = AwsSettings {
            region: String::new(),
            endpoint,
            static_keys: Some(("test".into(), "test".into())),
        };
    })
    .await
}

async fn cells_live(h: &Harness, live: usize) {
    eventually("cells live", Duration::from_secs(10), || async {
        let cells = h
            .client
            .clone()
            .list_load_cells(pb::ListLoadCellsRequest::default())
            .await
            .unwrap()
            .into_inner()
            .cells;
        if cells.iter().filter(|c| c.live_nodes > 0).count() == live { Ok(()) } else { Err(cells) }
    })
    .await;
}

#[tokio::test]
async fn target_group_weights_follow_measured_load() {
    let moto = Moto::start().await.expect("moto_server starts");
    let elb = client(&moto);
    let (listener, [a, b, legacy]) = scene(&moto, &elb).await;
    let zones = StaticZones::with(
        &[
            ("aws-a", Provider::Aws, "us-east-1a"),
            ("aws-b", Provider::Aws, "us-east-1b"),
            ("aws-c", Provider::Aws, "us-east-1c"),
        ],
        "team",
    );
    let endpoint = moto.endpoint();
    let h = aws_harness(zones, endpoint).await;
    // aws-a has no headroom left on one node and little on the other; aws-b is idle.
    let _nodes = h.keep_reporting(vec![
        node("team", "aws-a", "a0", 50, 50),
        node("team", "aws-a", "a1", 40, 50),
        node("team", "aws-b", "b0", 0, 50),
    ]);
    cells_live(&h, 2).await;

    let answer = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "aws-b".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(answer.applied, "{answer:?}");
    let expected = [(a.clone(), 200), (b.clone(), 999), (legacy, 1)];
    assert_eq!(
        weights(&elb, &listener).await,
        expected,
        "aws-a 10 free slots of 100, aws-b 50 of 50; legacy untouched"
    );
    let planned: Vec<(String, u32)> =
        answer.weights.iter().map(|w| (w.target.clone(), w.weight_permille)).collect();
    assert_eq!(planned, vec![(a, 200), (b, 1000)]);

    // Again with nothing changed: the listener already holds those weights.
    let again = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "aws-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(again.applied && again.note.contains("already"), "{again:?}");

    // A zone whose target group carries no tags is named in the refusal.
    let err = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "aws-c".into() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("ramen.io/zone=aws-c"), "{}", err.message());
}

/// The route `ramen-cloud` makes for EKS zones on a shared listener: the weights live in the
/// group's weighted rule, not the listener's default action, and the zone-header rules (one
/// zone each) are left as they are.
#[tokio::test]
async fn the_groups_weighted_rule_on_a_shared_listener_follows_measured_load() {
    use ramen_cloud::ZoneCloud;
    use ramen_cloud::testing::{Scene, forwarded, header_of};

    let scene = Scene::start().await;
    let cloud = scene.cloud();
    for zone in ["aws-a", "aws-b"] {
        let namespace = format!("ramen-team-{zone}");
        cloud.ensure_route(&scene.placement("team", zone, &namespace)).await.unwrap();
    }
    let zones = StaticZones::with(
        &[("aws-a", Provider::Aws, "us-east-1a"), ("aws-b", Provider::Aws, "us-east-1b")],
        "team",
    );
    let endpoint = scene.moto.endpoint();
    let h = aws_harness(zones, endpoint).await;
    let _nodes = h.keep_reporting(vec![
        node("team", "aws-a", "a0", 45, 50),
        node("team", "aws-b", "b0", 0, 50),
    ]);
    cells_live(&h, 2).await;
    let answer = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "aws-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(answer.applied && answer.note.contains("rule"), "{answer:?}");
    let groups = scene.target_groups().await;
    let arn = |name: &str| groups.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let rules = scene.rules().await;
    let weighted = rules.iter().find(|r| header_of(r).is_none()).expect("the weighted rule");
    assert_eq!(
        forwarded(weighted),
        [(arn("ramen-team-aws-a"), 100), (arn("ramen-team-aws-b"), 999)],
        "aws-a 5 free slots of 50 (100 permille of aws-b's 50), aws-b 1000 capped at ELBv2's 999"
    );
    for zone in ["aws-a", "aws-b"] {
        let pinned = rules
            .iter()
            .find(|r| header_of(r).as_deref() == Some(&format!("ramen-zone={zone}")[..]))
            .expect("the zone rule");
        assert_eq!(forwarded(pinned), [(arn(&format!("ramen-team-{zone}")), 1)]);
    }
}
