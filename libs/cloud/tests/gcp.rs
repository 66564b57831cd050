//! The GCP cloud resources of GKE zones against a local HTTP server playing the Compute, IAM
//! and Resource Manager REST paths (no emulator exists), driven through the real
//! google-cloud-rust clients: operations that finish later, stale fingerprints and etags,
//! resources still in use, 404 on delete, and the API going away mid-step.

use ipnet::IpNet;
use ramen_cloud::gcp::GcpCloud;
use ramen_cloud::testing::gcp::{GoogleStandIn, PROJECT};
use ramen_cloud::{CloudError, EdgeRule, Grant, Outcome, ProviderBounds, ZoneCloud};
use ramen_grant_bounds::Bounds;

/// Bounds a super admin widened to allow bindings on the whole project.
fn project_scope() -> ProviderBounds {
    ProviderBounds { unscoped: true, permissions: vec!["*".into()], ..Bounds::default().gcp }
}
use serde_json::json;

fn nets(list: &[&str]) -> Vec<IpNet> {
    list.iter().map(|n| n.parse().unwrap()).collect()
}

const A: (&str, &str, &str) = ("gke-a", "ramen-team-gke-a", "us-central1-a");
const B: (&str, &str, &str) = ("gke-b", "ramen-team-gke-b", "us-central1-b");

fn email(zone: &str) -> String {
    format!("ramen-team-{zone}@{PROJECT}.iam.gserviceaccount.com")
}

#[tokio::test]
async fn two_zones_get_accounts_routes_and_one_policy_and_teardown_leaves_nothing() {
    let google = GoogleStandIn::start().await;
    // Every change is an operation that runs a while before it lands.
    google.state.lock().running_for = std::time::Duration::from_millis(150);
    let cluster = google.cluster();
    let cloud = google.cloud();
    let a = google.placement(&cluster, "team", A.0, A.1, A.2);
    let b = google.placement(&cluster, "team", B.0, B.1, B.2);

    // Identity: a service account per placement, usable only by its namespace's
    // ServiceAccount, holding exactly the group's roles.
    let grants = [
        Grant {
            permissions: vec!["roles/storage.objectViewer".into()],
            resources: vec!["projects/_/buckets/team-data".into()],
        },
        Grant { permissions: vec!["roles/pubsub.publisher".into()], resources: vec![] },
    ];
    let made = cloud.ensure_identity(&a, &grants, &project_scope()).await.unwrap();
    assert_eq!(made.resources, [format!("projects/{PROJECT}/serviceAccounts/{}", email(A.0))]);
    cloud.ensure_identity(&b, &[], &project_scope()).await.unwrap();
    let account = format!("projects/{PROJECT}/serviceAccounts/{}", email(A.0));
    let workload = format!("serviceAccount:{PROJECT}.svc.id.goog[{}/ramen-worker]", A.1);
    assert_eq!(
        google.roles_of(&account, &workload),
        [("roles/iam.workloadIdentityUser".into(), None)]
    );
    let project = format!("projects/{PROJECT}");
    let member = format!("serviceAccount:{}", email(A.0));
    let roles = google.roles_of(&project, &member);
    assert_eq!(roles.len(), 2, "{roles:?}");
    let (role, condition) = &roles[0];
    assert_eq!(role, "roles/storage.objectViewer");
    assert!(
        condition
            .as_deref()
            .unwrap()
            .contains(r#"resource.name.startsWith("projects/_/buckets/team-data/")"#)
    );
    assert_eq!(roles[1], ("roles/pubsub.publisher".into(), None));
    // Changed rules replace the roles; the operator's binding stays.
    let fewer = [Grant { permissions: vec!["roles/pubsub.publisher".into()], resources: vec![] }];
    cloud.ensure_identity(&a, &fewer, &project_scope()).await.unwrap();
    assert_eq!(google.roles_of(&project, &member), [("roles/pubsub.publisher".into(), None)]);
    assert_eq!(google.roles_of(&project, "user:ops@acme.dev"), [("roles/owner".into(), None)]);
    let bad = [Grant { permissions: vec!["storage.objects.get".into()], resources: vec![] }];
    let err = cloud.ensure_identity(&a, &bad, &project_scope()).await.unwrap_err();
    assert!(matches!(err, CloudError::Refused(ref m) if m.contains("not a GCP role")), "{err}");

    // Route: the group's health check and backend service, a backend service per zone, and
    // route rules: pinned ones before the group's weighted one, the operator's left alone.
    let made = cloud.ensure_route(&a).await.unwrap();
    assert!(made.note.contains("backend service ramen-team created"), "{}", made.note);
    cloud.ensure_route(&b).await.unwrap();
    assert_eq!(cloud.ensure_route(&b).await.unwrap().note, "route in place");
    assert!(google.operation_reads() > 0, "operations were followed");
    let check = google.resource("global/healthChecks/ramen-team").unwrap();
    assert_eq!(check["httpHealthCheck"]["requestPath"], "/readyz");
    assert_eq!(check["httpHealthCheck"]["portSpecification"], "USE_SERVING_PORT");
    let rules = google.route_rules();
    let services: Vec<&str> = rules.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(
        services,
        ["fallback", "ramen-team-gke-a", "ramen-team-gke-b", "ramen-team"],
        "{rules:?}"
    );
    assert!(rules[3].0 >= 1_000_000 && rules[1].0 < 1_000_000, "{rules:?}");
    let map = google.resource("global/urlMaps/mcp").unwrap();
    let pinned = &map["pathMatchers"][0]["routeRules"][1]["matchRules"];
    assert_eq!(pinned[0]["fullPathMatch"], "/mcp/team");
    assert_eq!(pinned[1]["prefixMatch"], "/mcp/team/");
    assert_eq!(
        pinned[0]["headerMatches"][0],
        json!({"headerName": "ramen-zone", "exactMatch": "gke-a"})
    );

    // The NEG joins once GKE made it and the zone has serving workers.
    let ip = ["10.4.0.7".parse().unwrap()];
    let err = cloud.sync_targets(&a, &ip).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("GKE has not made NEG"), "{err}");
    google.add_neg(A.2, A.1);
    google.add_neg(B.2, B.1);
    cloud.sync_targets(&a, &ip).await.unwrap();
    cloud.sync_targets(&b, &ip).await.unwrap();
    assert_eq!(google.backends("ramen-team"), [(A.1.to_owned(), 1.0), (B.1.to_owned(), 1.0)]);
    assert_eq!(google.backends("ramen-team-gke-a"), [(A.1.to_owned(), 1.0)]);

    // One policy for the group: the union of both zones' networks, attached everywhere.
    let union = nets(&["10.1.0.0/16", "203.0.113.0/24", "2001:db8::/32"]);
    let made = cloud.set_edge_rule("team", &cluster, EdgeRule::Only(&union)).await.unwrap();
    assert!(made.note.contains("security policy ramen-team created"), "{}", made.note);
    let rules = google.policy_rules("ramen-team");
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!(rules[0].1, "allow");
    assert_eq!(rules[0].2, ["10.1.0.0/16", "203.0.113.0/24", "2001:db8::/32"]);
    assert_eq!(rules[1], (i64::from(i32::MAX), "deny(403)".into(), vec!["*".into()]));
    for service in ["ramen-team", "ramen-team-gke-a", "ramen-team-gke-b"] {
        let found = google.resource(&format!("global/backendServices/{service}")).unwrap();
        assert!(
            found["securityPolicy"].as_str().unwrap().ends_with("/securityPolicies/ramen-team"),
            "{service}"
        );
    }
    cloud.set_edge_rule("team", &cluster, EdgeRule::Everyone).await.unwrap();
    assert_eq!(
        google.policy_rules("ramen-team"),
        [(i64::from(i32::MAX), "allow".into(), vec!["*".into()])]
    );

    // Zone a goes: its rule, backend service and account; the group's stay for b.
    cloud.sync_targets(&a, &[]).await.unwrap();
    assert_eq!(google.backends("ramen-team"), [(B.1.to_owned(), 1.0)]);
    // The last serving zone leaving empties the service (a patch could not: it omits an
    // empty list), and joining again restores it.
    cloud.sync_targets(&b, &[]).await.unwrap();
    assert_eq!(google.backends("ramen-team"), []);
    cloud.sync_targets(&b, &ip).await.unwrap();
    assert_eq!(google.backends("ramen-team"), [(B.1.to_owned(), 1.0)]);
    let Outcome::Done(note) = cloud.remove_route(&a).await.unwrap() else { panic!("waiting") };
    assert!(note.contains("stays for gke-b"), "{note}");
    assert!(google.resource("global/backendServices/ramen-team-gke-a").is_none());
    assert!(google.resource("global/backendServices/ramen-team").is_some());
    cloud.remove_identity(&a).await.unwrap();
    assert!(google.roles_of(&project, &member).is_empty());
    assert!(!google.state.lock().accounts.contains_key(&email(A.0)));
    // The edge rule stays with the group's other zone.
    let one = nets(&["10.1.0.0/16"]);
    cloud.set_edge_rule("team", &cluster, EdgeRule::Only(&one)).await.unwrap();
    assert_eq!(google.policy_rules("ramen-team")[0].2, ["10.1.0.0/16"]);

    // Then b, the group's last: everything ramen made goes, detached before deleted.
    cloud.remove_route(&b).await.unwrap();
    cloud.set_edge_rule("team", &cluster, EdgeRule::Remove).await.unwrap();
    cloud.remove_identity(&b).await.unwrap();
    assert_eq!(google.ramens(), Vec::<String>::new());
    let services: Vec<String> = google.route_rules().into_iter().map(|r| r.2).collect();
    assert_eq!(services, ["fallback"], "the operator's rule stays");
    // Again: 404s are done.
    assert!(matches!(cloud.remove_route(&b).await.unwrap(), Outcome::Done(_)));
    assert!(matches!(cloud.remove_identity(&b).await.unwrap(), Outcome::Done(_)));
    cloud.set_edge_rule("team", &cluster, EdgeRule::Remove).await.unwrap();
}

#[tokio::test]
async fn stale_fingerprints_and_etags_are_read_again_never_overwritten() {
    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    let cloud = google.cloud();
    let a = google.placement(&cluster, "team", A.0, A.1, A.2);
    google.add_neg(A.2, A.1);
    // Each first write finds its etag or fingerprint moved by someone else.
    google.state.lock().stale_writes = 1;
    cloud
        .ensure_identity(
            &a,
            &[Grant { permissions: vec!["roles/viewer".into()], resources: vec![] }],
            &project_scope(),
        )
        .await
        .unwrap();
    let member = format!("serviceAccount:{}", email(A.0));
    assert_eq!(
        google.roles_of(&format!("projects/{PROJECT}"), &member),
        [("roles/viewer".into(), None)]
    );
    assert_eq!(google.roles_of(&format!("projects/{PROJECT}"), "user:ops@acme.dev").len(), 1);
    google.state.lock().stale_writes = 1;
    cloud.ensure_route(&a).await.unwrap();
    google.state.lock().stale_writes = 1;
    cloud.sync_targets(&a, &["10.0.0.1".parse().unwrap()]).await.unwrap();
    assert_eq!(google.backends("ramen-team").len(), 1);
    cloud.set_edge_rule("team", &cluster, EdgeRule::Everyone).await.unwrap();
    google.state.lock().stale_writes = 1;
    let list = nets(&["192.0.2.0/24"]);
    cloud.set_edge_rule("team", &cluster, EdgeRule::Only(&list)).await.unwrap();
    assert_eq!(google.policy_rules("ramen-team")[0].2, ["192.0.2.0/24"]);
}

#[tokio::test]
async fn two_writers_of_one_policy_end_with_one_of_their_rule_sets_whole() {
    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    // Two processes: no lock in common, only the policy's fingerprint.
    let (first, second) = (google.cloud(), google.cloud());
    first.set_edge_rule("team", &cluster, EdgeRule::Everyone).await.unwrap();
    let one: Vec<IpNet> = (0..12).map(|i| format!("10.{i}.0.0/16").parse().unwrap()).collect();
    let other: Vec<IpNet> = (0..3).map(|i| format!("172.16.{i}.0/24").parse().unwrap()).collect();
    let (x, y) = tokio::join!(
        first.set_edge_rule("team", &cluster, EdgeRule::Only(&one)),
        second.set_edge_rule("team", &cluster, EdgeRule::Only(&other)),
    );
    x.unwrap();
    y.unwrap();
    let ranges: Vec<String> = google
        .policy_rules("ramen-team")
        .into_iter()
        .filter(|r| r.1 == "allow")
        .flat_map(|r| r.2)
        .collect();
    let as_strings = |n: &[IpNet]| n.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let mut sorted = ranges.clone();
    sorted.sort();
    let (mut a, mut b) = (as_strings(&one), as_strings(&other));
    a.sort();
    b.sort();
    assert!(sorted == a || sorted == b, "a mix of two writers' rules: {ranges:?}");
    let policy = google.policy_rules("ramen-team");
    assert_eq!(policy.last().unwrap().1, "deny(403)");
}

#[tokio::test]
async fn an_api_outage_or_a_slow_operation_fails_the_step_retryably_and_the_retry_finishes() {
    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    let cloud = google.cloud();
    let a = google.placement(&cluster, "team", A.0, A.1, A.2);

    google.state.lock().down = true;
    let err = cloud.ensure_route(&a).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    google.state.lock().down = false;
    cloud.ensure_route(&a).await.unwrap();

    // An operation that outlasts the step's wait: unavailable now; the retried step finds
    // what the operation did once it finished, and goes on from there.
    google.state.lock().running_for = std::time::Duration::from_secs(600);
    let err = cloud.remove_route(&a).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("still"), "{err}");
    assert!(!google.state.lock().running.is_empty());
    google.state.lock().finish_running();
    let outcome = cloud.remove_route(&a).await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    assert_eq!(google.ramens(), Vec::<String>::new());
}

#[tokio::test]
async fn resources_ramen_did_not_make_are_refused_and_left_alone() {
    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    let cloud: GcpCloud = google.cloud();
    let a = google.placement(&cluster, "team", A.0, A.1, A.2);
    let key = "global/backendServices/ramen-team";
    google.state.lock().compute.insert(
        key.into(),
        json!({"name": "ramen-team", "description": "made by hand", "fingerprint": "AA=="}),
    );
    let err = cloud.ensure_route(&a).await.unwrap_err();
    assert!(matches!(err, CloudError::NotOurs(ref m) if m.contains("ramen-team")), "{err}");
    cloud.remove_route(&a).await.unwrap();
    assert!(google.resource(key).is_some(), "left alone");
    let named = ramen_config::ClusterConfig { path_matcher: "nope".into(), ..cluster.clone() };
    let b = google.placement(&named, "other", B.0, "ramen-other-gke-b", B.2);
    let err = cloud.ensure_route(&b).await.unwrap_err();
    assert!(matches!(err, CloudError::NotConfigured(ref m) if m.contains("path_matcher")), "{err}");
}

#[tokio::test]
async fn owner_and_project_wide_bindings_are_refused_and_nothing_is_bound() {
    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    let cloud = google.cloud();
    let a = google.placement(&cluster, "team", A.0, A.1, A.2);
    let bounds = Bounds::default().gcp;
    let project = format!("projects/{PROJECT}");
    let member = format!("serviceAccount:{}", email(A.0));

    // The attacks: the owner role, and a harmless-looking role on the whole project.
    let owner = [Grant {
        permissions: vec!["roles/owner".into()],
        resources: vec!["projects/_/buckets/team-data".into()],
    }];
    let err = cloud.ensure_identity(&a, &owner, &bounds).await.unwrap_err();
    assert!(
        matches!(err, CloudError::Refused(ref m) if m.contains("gcp.denied holds \"roles/owner\"")),
        "{err}"
    );
    let wide = [Grant { permissions: vec!["roles/pubsub.publisher".into()], resources: vec![] }];
    let err = cloud.ensure_identity(&a, &wide, &bounds).await.unwrap_err();
    assert!(
        matches!(err, CloudError::Refused(ref m) if m.contains("a grant on the whole project") && m.contains("gcp.unscoped is false")),
        "{err}"
    );
    assert!(google.roles_of(&project, &member).is_empty(), "nothing bound on the project");

    // Scoped to a resource, the same role is bound with a condition naming it.
    let scoped = [Grant {
        permissions: vec!["roles/pubsub.publisher".into()],
        resources: vec!["projects/p/topics/orders".into()],
    }];
    cloud.ensure_identity(&a, &scoped, &bounds).await.unwrap();
    let roles = google.roles_of(&project, &member);
    assert_eq!(roles.len(), 1, "{roles:?}");
    assert!(roles[0].1.as_deref().unwrap().contains("projects/p/topics/orders"), "{roles:?}");
    // Once the bounds are narrowed, a rule set before is refused and its binding taken away;
    // the rules still inside stay bound.
    let storage = Grant {
        permissions: vec!["roles/storage.objectViewer".into()],
        resources: vec!["projects/_/buckets/team-data".into()],
    };
    let both = [scoped[0].clone(), storage];
    cloud.ensure_identity(&a, &both, &bounds).await.unwrap();
    assert_eq!(google.roles_of(&project, &member).len(), 2);
    let narrowed = ProviderBounds { denied: vec!["roles/pubsub.*".into()], ..bounds };
    let err = cloud.ensure_identity(&a, &both, &narrowed).await.unwrap_err();
    assert!(err.to_string().contains("rule 1: permission \"roles/pubsub.publisher\""), "{err}");
    assert!(err.to_string().contains("gcp.denied holds \"roles/pubsub.*\""), "{err}");
    let roles = google.roles_of(&project, &member);
    assert_eq!(roles.len(), 1, "{roles:?}");
    assert_eq!(roles[0].0, "roles/storage.objectViewer");
}
