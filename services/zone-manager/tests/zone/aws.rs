//! EKS zones end to end: the zone-manager's gRPC API driving the Kubernetes provider against
//! the played Kubernetes API, and its cloud resources against `moto_server` (IAM, ELBv2,
//! WAFv2): a zone's role, route and the group's edge rule are made with the placement, follow
//! its pods and IP rules, and are gone when the group's zones are torn down.

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::PublishOptions;
use ramen_cloud::testing::{ACCOUNT, Scene, forwarded, header_of, url_decode};
use ramen_config::{ClusterAccess, ClusterConfig};
use ramen_kube_double::{KubeDouble, PodBehaviour};
use ramen_proto::auth::v1 as auth;
use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::{Nats, eventually};

use super::support::{FakeAuth, Harness, KEY, key_hash};

const GROUP: &str = "team";

async fn eks(
    scene: &Scene,
    double: &KubeDouble,
    kubeconfig: &std::path::Path,
) -> (Harness, Arc<FakeAuth>) {
    double.write_kubeconfig(kubeconfig, "eks-us-east-1").unwrap();
    let auth = Arc::new(FakeAuth::default());
    *auth.keys.lock() = vec![key_hash(KEY)];
    *auth.service_account_rules.lock() = vec![
        auth::ServiceAccountRule {
            provider: common::Provider::Aws as i32,
            permissions: vec!["s3:GetObject".into()],
            resources: vec!["arn:aws:s3:::team-data/*".into()],
            description: "read the team's data".into(),
        },
        auth::ServiceAccountRule {
            provider: common::Provider::Gcp as i32,
            permissions: vec!["roles/storage.objectViewer".into()],
            ..Default::default()
        },
    ];
    let cluster = ClusterConfig {
        access: ClusterAccess::Kubeconfig,
        kubeconfig: kubeconfig.display().to_string(),
        context: "eks-us-east-1".into(),
        ..scene.cluster.clone()
    };
    let clouds = ramen_zone_manager::Clouds { aws: Some(scene.shared_cloud()), gcp: None };
    let nats = Nats::start().await.expect("nats-server starts");
    let harness = Harness::start_with_clouds(
        nats,
        tempfile::tempdir().unwrap(),
        move |config| {
            config.kubernetes.clusters.insert("eks".into(), cluster);
            config.kubernetes.worker_image = "registry.example/ramen-worker:1.0".into();
            config.kubernetes.poll_interval = Duration::from_millis(100);
            config.kubernetes.route_sync_interval = Duration::from_millis(200);
        },
        auth.clone(),
        auth.clone(),
        Some(clouds),
    )
    .await;
    (harness, auth)
}

#[tokio::test]
async fn an_eks_zone_gets_its_role_route_and_edge_rule_and_teardown_leaves_nothing() {
    let scene = Scene::start().await;
    let double = KubeDouble::start().await.expect("the double starts");
    double.set_pod_behaviour("ramen-team-use1a", PodBehaviour::ready());
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, auth) = eks(&scene, &double, &dir.path().join("kubeconfig")).await;
    for (zone, location) in [("use1a", "us-east-1a"), ("use1b", "us-east-1b")] {
        let request = pb::CreateZoneRequest {
            name: zone.into(),
            provider: common::Provider::Aws as i32,
            region: location.into(),
            ..Default::default()
        };
        harness.client.create_zone(request).await.expect("zone created");
        let ensure = pb::EnsurePlacementRequest { group: GROUP.into(), zone: zone.into() };
        harness.client.ensure_placement(ensure).await.expect("placement ensured");
    }
    assert!(auth.calls_of("get_service_account_rules") >= 2);

    // The role: trusted by the namespace's ServiceAccount only, granted the group's AWS rules.
    let placement = harness
        .client
        .get_placement(pb::GetPlacementRequest { group: GROUP.into(), zone: "use1a".into() })
        .await
        .unwrap()
        .into_inner();
    let role_arn = format!("arn:aws:iam::{ACCOUNT}:role/ramen-team-use1a");
    assert_eq!(placement.service_account, role_arn);
    assert_eq!(
        placement.cloud_resources.len(),
        4,
        "role, target group, two rules: {:?}",
        placement.cloud_resources
    );
    assert_eq!(placement.cloud_resources[0], role_arn);
    let policy = scene.role_policy("ramen-team-use1a").await.unwrap();
    assert!(
        policy.contains("s3:GetObject") && !policy.contains("roles/storage"),
        "only the AWS rules: {policy}"
    );
    let role = scene.iam.get_role().role_name("ramen-team-use1a").send().await.unwrap();
    let trust = url_decode(role.role().unwrap().assume_role_policy_document().unwrap());
    assert!(trust.contains("system:serviceaccount:ramen-team-use1a:ramen-worker"), "{trust}");
    let sa = double.get("v1", "ServiceAccount", "ramen-team-use1a", "ramen-worker").unwrap();
    assert_eq!(sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"], role_arn.as_str());

    // Rules changed on the group page: auth says so, and every zone's role follows at once.
    auth.service_account_rules.lock()[0].permissions = vec!["sqs:SendMessage".into()];
    let event =
        ev::ServiceAccountRulesChanged { group: GROUP.into(), version: 2, ..Default::default() };
    let subject = ramen_service::subject::<ev::ServiceAccountRulesChanged>();
    harness
        .platform
        .bus
        .publish(&subject, &event, PublishOptions::with_msg_id("rules-2"))
        .await
        .unwrap();
    for role in ["ramen-team-use1a", "ramen-team-use1b"] {
        eventually(
            &format!("{role} granted the new rules only"),
            Duration::from_secs(30),
            || async {
                let policy = scene.role_policy(role).await?;
                if policy.contains("sqs:SendMessage") && !policy.contains("s3:GetObject") {
                    Ok(())
                } else {
                    Err(policy)
                }
            },
        )
        .await;
    }

    // The route: a zone rule each and the group's weighted rule over both target groups.
    let groups = scene.target_groups().await;
    let arn =
        |name: &str| groups.iter().find(|(n, _)| n == name).map(|(_, a)| a.clone()).expect(name);
    let (tg_a, tg_b) = (arn("ramen-team-use1a"), arn("ramen-team-use1b"));
    assert_eq!(placement.cloud_resources[1], tg_a);
    let rules = scene.rules().await;
    assert_eq!(rules.len(), 3, "{rules:#?}");
    let weighted = rules.iter().find(|r| header_of(r).is_none()).unwrap();
    assert_eq!(forwarded(weighted), [(tg_a.clone(), 100), (tg_b.clone(), 100)]);

    // A rollout registers the pods that serve.
    harness.write_config(GROUP, "use1a", "c1", "examples/hello-repo").await;
    let stable =
        harness.restart(GROUP, "use1a", common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    let mut ips: Vec<String> = stable
        .workers
        .iter()
        .map(|w| w.mcp_address.rsplit_once(':').unwrap().0.to_owned())
        .collect();
    ips.sort();
    assert!(!ips.is_empty());
    assert_eq!(scene.targets(&tg_a).await, ips, "the ready stable pods, by IP");

    // A pod the cluster replaces outside a rollout (an eviction): its successor is
    // registered and the gone one deregistered by the route sync, not at the next deploy.
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(double.client().await.unwrap(), "ramen-team-use1a");
    let evicted = stable.workers[0].id.clone();
    pods.delete(&evicted, &Default::default()).await.expect("pod deleted");
    eventually("the replacement pod is the registered target", Duration::from_secs(30), || {
        let mut client = harness.client.clone();
        let scene = &scene;
        let tg_a = tg_a.clone();
        let evicted = evicted.clone();
        async move {
            let request = pb::ListWorkersRequest {
                group: GROUP.into(),
                zone: "use1a".into(),
                track: common::Track::Worker as i32,
                ..Default::default()
            };
            let workers =
                client.list_workers(request).await.map_err(|e| e.to_string())?.into_inner();
            let mut serving: Vec<String> = workers
                .workers
                .iter()
                .filter(|w| w.state == common::WorkerState::Ready as i32 && w.id != evicted)
                .map(|w| w.mcp_address.rsplit_once(':').unwrap().0.to_owned())
                .collect();
            serving.sort();
            let targets = scene.targets(&tg_a).await;
            if !serving.is_empty()
                && targets == serving
                && workers.workers.iter().all(|w| w.id != evicted)
            {
                Ok(())
            } else {
                Err(format!("targets {targets:?}, serving {serving:?}"))
            }
        }
    })
    .await;

    // IP rules: one edge rule for the group. While use1b allows everyone, so does the edge.
    let set_rules = |zone: &str, cidrs: &[&str]| pb::SetIpRulesRequest {
        group: GROUP.into(),
        zone: zone.into(),
        cidrs: cidrs.iter().map(|c| (*c).to_owned()).collect(),
    };
    harness.client.set_ip_rules(set_rules("use1a", &["10.0.0.0/8"])).await.expect("rules set");
    let acl: Vec<String> = scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(acl, ["operator-allow-home"], "use1b has no list: the edge lets everyone through");
    harness
        .client
        .set_ip_rules(set_rules("use1b", &["192.168.0.0/16", "2001:db8::/32"]))
        .await
        .expect("rules set");
    let acl: Vec<String> = scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(acl, ["operator-allow-home", "ramen-team"]);
    let sets = scene.ip_sets().await;
    assert_eq!(
        sets,
        [
            (
                "ramen-team-ipv4".to_owned(),
                vec!["10.0.0.0/8".to_owned(), "192.168.0.0/16".to_owned()]
            ),
            ("ramen-team-ipv6".to_owned(), vec!["2001:db8::/32".to_owned()]),
        ],
        "the union of both zones' lists"
    );

    // One zone torn down: the group's edge rule keeps what the other allows.
    harness.teardown_done(GROUP, "use1a").await;
    let sets = scene.ip_sets().await;
    assert_eq!(sets[0].1, ["192.168.0.0/16"], "{sets:?}");
    let rules = scene.rules().await;
    assert_eq!(rules.len(), 2, "{rules:#?}");
    let weighted = rules.iter().find(|r| header_of(r).is_none()).unwrap();
    assert_eq!(forwarded(weighted), [(tg_b.clone(), 100)]);
    assert!(!scene.target_groups().await.iter().any(|(n, _)| n == "ramen-team-use1a"));
    assert!(!scene.roles().await.contains(&"ramen-team-use1a".to_owned()));

    // The last zone: nothing of the group is left in the cloud.
    harness.teardown_done(GROUP, "use1b").await;
    assert!(scene.rules().await.is_empty(), "{:#?}", scene.rules().await);
    assert!(scene.target_groups().await.is_empty());
    assert!(scene.ip_sets().await.is_empty(), "{:?}", scene.ip_sets().await);
    let acl: Vec<String> = scene.acl_rules().await.iter().map(|r| r.name().to_owned()).collect();
    assert_eq!(acl, ["operator-allow-home"]);
    assert!(
        !scene.roles().await.iter().any(|r| r.starts_with("ramen-")),
        "{:?}",
        scene.roles().await
    );
}
