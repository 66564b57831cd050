//! The AWS cloud resources of EKS zones against `moto_server`: the test sets the scene an
//! operator provides (VPC, ALB, listener, web ACL with a rule of its own) through the real
//! SDKs, drives [`AwsCloud`], and reads every resource back through the same APIs.

use std::net::IpAddr;

use aws_sdk_elasticloadbalancingv2::types::{ProtocolEnum, Rule};
use ipnet::IpNet;
use ramen_cloud::aws::AwsCloud;
use ramen_cloud::testing::{ACCOUNT, BUCKET, OIDC, Scene, forwarded, header_of, url_decode};
use ramen_cloud::{CloudError, EdgeRule, Grant, Outcome, ProviderBounds, ZoneCloud};
use ramen_grant_bounds::Bounds;

/// The bounds a platform starts with.
fn bounds() -> ProviderBounds {
    Bounds::default().aws
}

/// Bounds a super admin widened to let rules name no resource.
fn unscoped() -> ProviderBounds {
    ProviderBounds { unscoped: true, ..bounds() }
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
    let made = cloud.ensure_identity(&a, &grants, &bounds()).await.unwrap();
    assert_eq!(made.resources, [format!("arn:aws:iam::{ACCOUNT}:role/ramen-team-aws-a")]);
    cloud.ensure_identity(&b, &[], &bounds()).await.unwrap();
    let role = scene.iam.get_role().role_name("ramen-team-aws-a").send().await.unwrap();
    let trust = url_decode(role.role().unwrap().assume_role_policy_document().unwrap());
    assert!(trust.contains("system:serviceaccount:ramen-team-aws-a:ramen-worker"), "{trust}");
    assert!(
        trust.contains(&format!("oidc-provider/{OIDC}")) && trust.contains("sts.amazonaws.com"),
        "{trust}"
    );
    let policy = scene.role_policy("ramen-team-aws-a").await.unwrap();
    assert!(policy.contains("s3:GetObject") && policy.contains("team-data"), "{policy}");
    // Changed rules replace the policy; no rules leave none (and only those).
    let fewer = [Grant { permissions: vec!["sqs:SendMessage".into()], resources: vec![] }];
    cloud.ensure_identity(&a, &fewer, &unscoped()).await.unwrap();
    let policy = scene.role_policy("ramen-team-aws-a").await.unwrap();
    assert!(
        policy.contains("sqs:SendMessage")
            && !policy.contains("s3:GetObject")
            && policy.contains("\"*\""),
        "{policy}"
    );
    let listed = scene.iam.list_role_policies().role_name("ramen-team-aws-b").send().await.unwrap();
    assert_eq!(listed.policy_names(), ["ramen-blob-access"], "only the bucket, no rules");

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
    let err = cloud.ensure_identity(&a, &[], &bounds()).await.unwrap_err();
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
    let err = cloud.ensure_identity(&a, &[], &bounds()).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("IAM GetPolicy"), "{err}");
    let err = cloud.ensure_route(&a).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("ELBv2"), "{err}");
    let err = cloud.set_edge_rule("team", &scene.cluster, EdgeRule::Remove).await.unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("WAFv2"), "{err}");
}

#[tokio::test]
async fn an_api_that_accepts_and_never_answers_times_out_as_unavailable() {
    let scene = Scene::start().await;
    let cloud = scene.cloud();
    let a = scene.placement("team", "aws-a", "ramen-team-aws-a");
    scene.moto.pause().unwrap();
    let err = cloud.ensure_identity(&a, &[], &bounds()).await.unwrap_err();
    scene.moto.resume().unwrap();
    assert!(err.is_retryable(), "{err}");
    // Once it answers again, the same step finishes and nothing is made twice.
    cloud.ensure_identity(&a, &[], &bounds()).await.unwrap();
    cloud.ensure_identity(&a, &[], &bounds()).await.unwrap();
    assert_eq!(scene.roles().await.iter().filter(|r| r.starts_with("ramen-")).count(), 1);
}

#[tokio::test]
async fn a_group_admins_wildcard_is_refused_and_every_role_is_bounded_to_its_group() {
    let scene = Scene::start().await;
    let cloud = scene.cloud();
    let a = scene.placement("team", "aws-a", "ramen-team-aws-a");

    // The attack: `*` on everything. Refused before anything is made, naming the bound.
    let everything = [Grant { permissions: vec!["*".into()], resources: vec![] }];
    let err = cloud.ensure_identity(&a, &everything, &bounds()).await.unwrap_err();
    assert!(
        matches!(err, CloudError::Refused(ref m) if m.contains("rule 1: permission \"*\"") && m.contains("aws.wildcards is false")),
        "{err}"
    );
    let passing = [Grant {
        permissions: vec!["iam:PassRole".into()],
        resources: vec!["arn:aws:iam::123456789012:role/admin".into()],
    }];
    let err = cloud.ensure_identity(&a, &passing, &bounds()).await.unwrap_err();
    assert!(err.to_string().contains("aws.denied holds \"iam:*\""), "{err}");
    let rules = scene.role_policy("ramen-team-aws-a").await;
    assert!(rules.is_err(), "nothing of the rules applied: {rules:?}");

    // A rule inside the bounds: the role carries the boundary, which denies what the bounds
    // deny whatever any policy of the role allows.
    let grants = [Grant {
        permissions: vec!["s3:GetObject".into()],
        resources: vec!["arn:aws:s3:::team-data/*".into()],
    }];
    cloud.ensure_identity(&a, &grants, &bounds()).await.unwrap();
    let (arn, boundary) = scene.boundary("ramen-team-aws-a").await.expect("a boundary");
    assert_eq!(arn, format!("arn:aws:iam::{ACCOUNT}:policy/ramen/ramen-team-aws-a-boundary"));
    let statements = boundary["Statement"].as_array().unwrap();
    let deny = statements.iter().find(|s| s["Effect"] == "Deny").expect("a deny");
    assert_eq!(
        deny["Action"],
        serde_json::json!(["iam:*", "sts:*", "organizations:*", "account:*"])
    );
    assert_eq!(deny["Resource"], "*");
    let allow = statements.iter().find(|s| s["Sid"] == "Bounds").unwrap();
    assert_eq!(allow["Action"], serde_json::json!(["*"]));

    // The workers' own reach into the platform's bucket: their group's prefix only.
    let blob = scene.inline_policy("ramen-team-aws-a", "ramen-blob-access").await.unwrap();
    assert!(blob.contains(&format!("arn:aws:s3:::{BUCKET}/groups/team/*")), "{blob}");
    assert!(blob.contains(&format!("arn:aws:s3:::{BUCKET}/groups/team/environments/*")), "{blob}");
    assert!(!blob.contains("groups/*") && !blob.contains(&format!("{BUCKET}/*")), "{blob}");
    assert!(serde_json::to_string(&boundary).unwrap().contains(&format!("{BUCKET}/groups/team/*")));

    // The super admin narrows the bounds: the next ensure replaces the boundary's version, and
    // a role whose boundary was taken off (by hand) gets it back.
    let narrowed =
        ProviderBounds { denied: vec!["iam:*".into(), "s3:DeleteObject".into()], ..bounds() };
    scene
        .iam
        .delete_role_permissions_boundary()
        .role_name("ramen-team-aws-a")
        .send()
        .await
        .unwrap();
    let made = cloud.ensure_identity(&a, &grants, &narrowed).await.unwrap();
    assert!(made.note.contains("boundary ramen-team-aws-a-boundary updated"), "{}", made.note);
    assert!(made.note.contains("permissions boundary set"), "{}", made.note);
    let (_, boundary) = scene.boundary("ramen-team-aws-a").await.expect("a boundary again");
    let deny =
        boundary["Statement"].as_array().unwrap().iter().find(|s| s["Effect"] == "Deny").cloned();
    assert_eq!(deny.unwrap()["Action"], serde_json::json!(["iam:*", "s3:DeleteObject"]));
    // Unchanged bounds change nothing; six narrowings stay within IAM's five versions.
    let again = cloud.ensure_identity(&a, &grants, &narrowed).await.unwrap();
    assert!(!again.note.contains("boundary"), "{}", again.note);
    for i in 0..6 {
        let mut more = narrowed.clone();
        more.denied.push(format!("s3:Put{i}"));
        cloud.ensure_identity(&a, &grants, &more).await.unwrap();
    }

    // Teardown takes the boundary policy with the role.
    let Outcome::Done(note) = cloud.remove_identity(&a).await.unwrap() else { panic!() };
    assert!(note.contains("policy ramen-team-aws-a-boundary deleted"), "{note}");
    assert!(!scene.policy_exists(&arn).await, "the boundary is gone");
}
