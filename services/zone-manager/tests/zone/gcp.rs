//! GKE zones end to end: the zone-manager's gRPC API driving the Kubernetes provider against
//! the played Kubernetes API, and its cloud resources against the played Google APIs
//! (Compute, IAM, Resource Manager) through the real clients: a zone's service account,
//! route and the group's Cloud Armor policy are made with the placement, follow its pods and
//! IP rules, and are gone when the group's zones are torn down.

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::PublishOptions;
use ramen_cloud::testing::gcp::{GoogleStandIn, PROJECT};
use ramen_config::{ClusterAccess, ClusterConfig};
use ramen_kube_double::{KubeDouble, PodBehaviour};
use ramen_proto::auth::v1 as auth;
use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::{Nats, eventually};

use super::support::{FakeAuth, Harness, KEY, key_hash};

const GROUP: &str = "team";
const ZONES: [(&str, &str); 2] = [("gkea", "us-central1-a"), ("gkeb", "us-central1-b")];

async fn gke(
    google: &GoogleStandIn,
    double: &KubeDouble,
    kubeconfig: &std::path::Path,
) -> (Harness, Arc<FakeAuth>) {
    double.write_kubeconfig(kubeconfig, "gke-us-central1").unwrap();
    let auth = Arc::new(FakeAuth::default());
    *auth.keys.lock() = vec![key_hash(KEY)];
    *auth.service_account_rules.lock() = vec![
        auth::ServiceAccountRule {
            provider: common::Provider::Gcp as i32,
            permissions: vec!["roles/storage.objectViewer".into()],
            resources: vec!["projects/_/buckets/team-data".into()],
            description: "read the team's data".into(),
        },
        auth::ServiceAccountRule {
            provider: common::Provider::Aws as i32,
            permissions: vec!["s3:GetObject".into()],
            ..Default::default()
        },
    ];
    let cluster = ClusterConfig {
        access: ClusterAccess::Kubeconfig,
        kubeconfig: kubeconfig.display().to_string(),
        context: "gke-us-central1".into(),
        ..google.cluster()
    };
    let clouds = ramen_zone_manager::Clouds { aws: None, gcp: Some(Arc::new(google.cloud())) };
    let nats = Nats::start().await.expect("nats-server starts");
    let harness = Harness::start_with_clouds(
        nats,
        tempfile::tempdir().unwrap(),
        move |config| {
            config.kubernetes.clusters.insert("gke".into(), cluster);
            config.kubernetes.worker_image = "registry.example/ramen-worker:1.0".into();
            config.kubernetes.poll_interval = Duration::from_millis(100);
        },
        auth.clone(),
        auth.clone(),
        Some(clouds),
    )
    .await;
    (harness, auth)
}

fn email(zone: &str) -> String {
    format!("ramen-team-{zone}@{PROJECT}.iam.gserviceaccount.com")
}

#[tokio::test]
async fn a_gke_zone_gets_its_account_route_and_policy_and_teardown_leaves_nothing() {
    let google = GoogleStandIn::start().await;
    // Changes are operations that take a while, as on Compute.
    google.state.lock().running_for = Duration::from_millis(50);
    let double = KubeDouble::start().await.expect("the double starts");
    double.set_pod_behaviour("ramen-team-gkea", PodBehaviour::ready());
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, auth) = gke(&google, &double, &dir.path().join("kubeconfig")).await;
    for (zone, location) in ZONES {
        let request = pb::CreateZoneRequest {
            name: zone.into(),
            provider: common::Provider::Gcp as i32,
            region: location.into(),
            ..Default::default()
        };
        harness.client.create_zone(request).await.expect("zone created");
        let ensure = pb::EnsurePlacementRequest { group: GROUP.into(), zone: zone.into() };
        harness.client.ensure_placement(ensure).await.expect("placement ensured");
        // Playing GKE's NEG controller: the worker Service's annotation names the NEG.
        let namespace = format!("ramen-team-{zone}");
        let service = double.get("v1", "Service", &namespace, "worker").expect("worker Service");
        let annotation =
            service["metadata"]["annotations"]["cloud.google.com/neg"].as_str().unwrap();
        let neg: serde_json::Value = serde_json::from_str(annotation).unwrap();
        assert_eq!(neg["exposed_ports"]["8000"]["name"], namespace.as_str());
        google.add_neg(location, &namespace);
    }
    assert!(auth.calls_of("get_service_account_rules") >= 2);

    // The account: bound to the namespace's ServiceAccount, granted the group's GCP rules.
    let placement = harness
        .client
        .get_placement(pb::GetPlacementRequest { group: GROUP.into(), zone: "gkea".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(placement.service_account, email("gkea"));
    assert_eq!(
        placement.cloud_resources.len(),
        4,
        "account, health check, two backend services: {:?}",
        placement.cloud_resources
    );
    let sa = double.get("v1", "ServiceAccount", "ramen-team-gkea", "ramen-worker").unwrap();
    assert_eq!(
        sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"],
        email("gkea").as_str()
    );
    let account = format!("projects/{PROJECT}/serviceAccounts/{}", email("gkea"));
    let workload = format!("serviceAccount:{PROJECT}.svc.id.goog[ramen-team-gkea/ramen-worker]");
    assert_eq!(google.roles_of(&account, &workload).len(), 1);
    let project = format!("projects/{PROJECT}");
    let member = format!("serviceAccount:{}", email("gkea"));
    let roles = google.roles_of(&project, &member);
    assert_eq!(roles.len(), 1, "only the GCP rules: {roles:?}");
    assert_eq!(roles[0].0, "roles/storage.objectViewer");

    // Rules changed on the group page to a role on the whole project: outside the bounds auth
    // answers (its defaults), so no zone binds it, and the rules before it are taken away.
    auth.service_account_rules.lock()[0] = auth::ServiceAccountRule {
        provider: common::Provider::Gcp as i32,
        permissions: vec!["roles/pubsub.subscriber".into()],
        ..Default::default()
    };
    let defaults = ramen_grant_bounds::Bounds::default();
    *auth.service_account_bounds.lock() = Some(auth::ServiceAccountBounds {
        aws: Some((&defaults.aws).into()),
        gcp: Some((&defaults.gcp).into()),
        ..Default::default()
    });
    let event =
        ev::ServiceAccountRulesChanged { group: GROUP.into(), version: 2, ..Default::default() };
    let subject = ramen_service::subject::<ev::ServiceAccountRulesChanged>();
    harness
        .platform
        .bus
        .publish(&subject, &event, PublishOptions::with_msg_id("rules-2"))
        .await
        .unwrap();
    let member_a = format!("serviceAccount:{}", email("gkea"));
    eventually("gkea's account holds no role", Duration::from_secs(30), || {
        let roles = google.roles_of(&project, &member_a);
        async move { if roles.is_empty() { Ok(()) } else { Err(format!("{roles:?}")) } }
    })
    .await;

    // A super admin allows project scope: the same rules now reach every zone.
    let mut widened = defaults.gcp.clone();
    widened.unscoped = true;
    auth.service_account_bounds.lock().as_mut().unwrap().gcp = Some((&widened).into());
    let event =
        ev::ServiceAccountRulesChanged { group: GROUP.into(), version: 3, ..Default::default() };
    harness
        .platform
        .bus
        .publish(&subject, &event, PublishOptions::with_msg_id("rules-3"))
        .await
        .unwrap();
    for zone in ["gkea", "gkeb"] {
        let member = format!("serviceAccount:{}", email(zone));
        eventually(
            &format!("{zone}'s account holds the new role only"),
            Duration::from_secs(30),
            || {
                let roles = google.roles_of(&project, &member);
                async move {
                    if roles == [("roles/pubsub.subscriber".to_owned(), None)] {
                        Ok(())
                    } else {
                        Err(format!("{roles:?}"))
                    }
                }
            },
        )
        .await;
    }

    // The route: a pinned rule per zone before the group's weighted one.
    let services: Vec<String> = google.route_rules().into_iter().map(|r| r.2).collect();
    assert_eq!(services, ["fallback", "ramen-team-gkea", "ramen-team-gkeb", "ramen-team"]);

    // A rollout: the zone has serving workers, so its NEG joins the group's services.
    assert!(google.backends("ramen-team").is_empty());
    harness.write_config(GROUP, "gkea", "c1", "examples/hello-repo").await;
    let stable =
        harness.restart(GROUP, "gkea", common::Track::Worker, Duration::from_secs(30)).await;
    assert!(stable.ready, "{:?}", stable.not_ready);
    assert_eq!(google.backends("ramen-team"), [("ramen-team-gkea".to_owned(), 1.0)]);
    assert_eq!(google.backends("ramen-team-gkea"), [("ramen-team-gkea".to_owned(), 1.0)]);

    // IP rules: one policy for the group. While gkeb allows everyone, so does the edge.
    let set_rules = |zone: &str, cidrs: &[&str]| pb::SetIpRulesRequest {
        group: GROUP.into(),
        zone: zone.into(),
        cidrs: cidrs.iter().map(|c| (*c).to_owned()).collect(),
    };
    harness.client.set_ip_rules(set_rules("gkea", &["10.0.0.0/8"])).await.expect("rules set");
    let everyone = vec![(i64::from(i32::MAX), "allow".to_owned(), vec!["*".to_owned()])];
    assert_eq!(google.policy_rules("ramen-team"), everyone, "gkeb has no list");
    harness
        .client
        .set_ip_rules(set_rules("gkeb", &["192.168.0.0/16", "2001:db8::/32"]))
        .await
        .expect("rules set");
    let rules = google.policy_rules("ramen-team");
    assert_eq!(
        rules[0].2,
        ["10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32"],
        "the union: {rules:?}"
    );
    assert_eq!(rules[1].1, "deny(403)");
    let attached = google.resource("global/backendServices/ramen-team").unwrap();
    assert!(attached["securityPolicy"].as_str().unwrap().ends_with("/ramen-team"));

    // One zone torn down: the group's policy keeps what the other allows.
    harness.teardown_done(GROUP, "gkea").await;
    assert_eq!(google.policy_rules("ramen-team")[0].2, ["192.168.0.0/16", "2001:db8::/32"]);
    let backends = google.backends("ramen-team");
    let log: Vec<String> = google.state.lock().log.iter().rev().take(40).cloned().collect();
    assert!(backends.is_empty(), "gkea's NEG left before its namespace: {backends:?} {log:#?}");
    assert!(google.resource("global/backendServices/ramen-team-gkea").is_none());
    assert!(!google.state.lock().accounts.contains_key(&email("gkea")));
    assert!(google.roles_of(&project, &member).is_empty());
    let services: Vec<String> = google.route_rules().into_iter().map(|r| r.2).collect();
    assert_eq!(services, ["fallback", "ramen-team-gkeb", "ramen-team"]);

    // The last zone: nothing of the group is left in the cloud.
    harness.teardown_done(GROUP, "gkeb").await;
    assert_eq!(google.ramens(), Vec::<String>::new());
    let services: Vec<String> = google.route_rules().into_iter().map(|r| r.2).collect();
    assert_eq!(services, ["fallback"]);
    assert_eq!(google.roles_of(&project, "user:ops@acme.dev"), [("roles/owner".to_owned(), None)]);
}

#[tokio::test]
async fn a_google_outage_mid_ensure_and_mid_teardown_is_retried_and_nothing_is_left() {
    let google = GoogleStandIn::start().await;
    let double = KubeDouble::start().await.expect("the double starts");
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, _auth) = gke(&google, &double, &dir.path().join("kubeconfig")).await;
    let (zone, location) = ZONES[0];
    let request = pb::CreateZoneRequest {
        name: zone.into(),
        provider: common::Provider::Gcp as i32,
        region: location.into(),
        ..Default::default()
    };
    harness.client.create_zone(request).await.expect("zone created");

    // Google down while the placement is ensured: a retryable error, nothing recorded as made.
    google.state.lock().down = true;
    let ensure = pb::EnsurePlacementRequest { group: GROUP.into(), zone: zone.into() };
    let status = harness.client.ensure_placement(ensure.clone()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let get = pb::GetPlacementRequest { group: GROUP.into(), zone: zone.into() };
    if let Ok(placement) = harness.client.get_placement(get.clone()).await {
        assert!(placement.into_inner().cloud_resources.is_empty());
    }
    // Back: the retry makes and records everything.
    google.state.lock().down = false;
    harness.client.ensure_placement(ensure).await.expect("placement ensured");
    let placement = harness.client.get_placement(get).await.unwrap().into_inner();
    assert_eq!(placement.cloud_resources.len(), 4, "{:?}", placement.cloud_resources);
    google.add_neg(location, "ramen-team-gkea");

    // Down again as the zone is torn down: the step fails, is shown, and is retried.
    google.state.lock().down = true;
    let teardown = pb::TeardownRequest { group: GROUP.into(), zone: zone.into() };
    harness.client.teardown(teardown.clone()).await.expect("teardown started");
    eventually("the teardown shows its failed step", Duration::from_secs(30), || {
        let mut client = harness.client.clone();
        let teardown = teardown.clone();
        async move {
            let progress =
                client.get_teardown(teardown).await.map_err(|e| e.to_string())?.into_inner();
            let placement = progress.placements.first().ok_or("no placement")?;
            let failed =
                placement.steps.iter().find(|s| s.status == common::StepStatus::Failed as i32);
            match failed {
                Some(step)
                    if placement.state == pb::TeardownState::Retrying as i32
                        && !step.detail.is_empty() =>
                {
                    Ok(())
                }
                _ => Err(format!("{placement:?}")),
            }
        }
    })
    .await;
    assert!(!google.ramens().is_empty(), "nothing removed while Google is down");
    google.state.lock().down = false;
    harness.teardown_done(GROUP, zone).await;
    assert_eq!(google.ramens(), Vec::<String>::new());
    let services: Vec<String> = google.route_rules().into_iter().map(|r| r.2).collect();
    assert_eq!(services, ["fallback"]);
}
