//! The bounds on service-account rules: what a group admin may grant the group's workers is
//! what a super admin allows, checked when rules are set.

use std::time::Duration;

use ramen_grant_bounds::Bounds;
use ramen_proto::auth::v1::*;
use ramen_proto::common::v1::Provider;
use ramen_proto::events::v1::ServiceAccountRulesChanged;
use tonic::Code;

use crate::support::{World, as_actor};

fn rule(provider: Provider, permission: &str, resources: &[&str]) -> ServiceAccountRule {
    ServiceAccountRule {
        provider: provider as i32,
        permissions: vec![permission.into()],
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
        description: String::new(),
    }
}

fn set(rules: Vec<ServiceAccountRule>) -> SetServiceAccountRulesRequest {
    SetServiceAccountRulesRequest { group: "alpha".into(), rules, expected_version: 0 }
}

#[tokio::test]
async fn a_group_admin_cannot_grant_outside_the_bounds_a_super_admin_sets() {
    let world = World::start().await;
    world.group("alpha").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    let root = world.user("root@ramen.dev", true).await;

    // The attacks: account admin on AWS, project owner and a project-wide role on GCP.
    let attacks = [
        (
            rule(Provider::Aws, "*", &[]),
            "rule 1: permission \"*\" is outside the AWS bounds: no wildcards (aws.wildcards is false)",
        ),
        (
            rule(Provider::Aws, "iam:CreateAccessKey", &["arn:aws:iam::1:user/x"]),
            "aws.denied holds \"iam:*\"",
        ),
        (
            rule(Provider::Gcp, "roles/owner", &["projects/_/buckets/b"]),
            "gcp.denied holds \"roles/owner\"",
        ),
        (
            rule(Provider::Gcp, "roles/editor", &["projects/_/buckets/b"]),
            "gcp.denied holds \"roles/editor\"",
        ),
        (
            rule(Provider::Gcp, "roles/pubsub.publisher", &[]),
            "a grant on the whole project is outside the GCP bounds",
        ),
    ];
    for (attack, says) in attacks {
        let err = world
            .client()
            .set_service_account_rules(as_actor(&admin, set(vec![attack])))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
        assert!(err.message().contains(says), "{}", err.message());
        assert!(err.message().contains("a super admin sets the bounds"), "{}", err.message());
    }
    let stored = GetServiceAccountRulesRequest { group: "alpha".into() };
    let stored = world
        .client()
        .get_service_account_rules(as_actor(&admin, stored))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stored.version, stored.rules.len()), (0, 0), "nothing stored");
    // The answer carries the bounds in force: the defaults, never set.
    let bounds = stored.bounds.expect("bounds with the rules");
    assert_eq!(bounds.version, 0);
    assert_eq!(Bounds::from_pb(bounds.aws, bounds.gcp), Bounds::default());

    // A group admin reads the bounds but cannot change them.
    let read = world
        .client()
        .get_service_account_bounds(as_actor(&admin, GetServiceAccountBoundsRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read.version, 0);
    let mut widened = Bounds::default();
    widened.gcp.unscoped = true;
    let widen = |expected_version| SetServiceAccountBoundsRequest {
        aws: Some((&widened.aws).into()),
        gcp: Some((&widened.gcp).into()),
        expected_version,
    };
    let err =
        world.client().set_service_account_bounds(as_actor(&admin, widen(0))).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");

    // A rule inside the bounds is stored.
    let inside = rule(Provider::Gcp, "roles/pubsub.publisher", &["projects/p/topics/orders"]);
    world.client().set_service_account_rules(as_actor(&admin, set(vec![inside]))).await.unwrap();

    // The super admin allows project scope: every group with rules is told to apply them
    // again, and the project-wide rule now passes.
    let subject = ramen_service::subject::<ServiceAccountRulesChanged>();
    let mut events =
        world.platform.bus.subscribe::<ServiceAccountRulesChanged>(&subject).await.unwrap();
    let written = world
        .client()
        .set_service_account_bounds(as_actor(&root, widen(0)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((written.version, written.updated_by.as_str()), (1, root.as_str()));
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("open")
        .payload;
    assert_eq!(event.group, "alpha");
    let wide = rule(Provider::Gcp, "roles/pubsub.publisher", &[]);
    world.client().set_service_account_rules(as_actor(&admin, set(vec![wide]))).await.unwrap();
    // A stale version is refused; malformed bounds are refused naming the field.
    let err =
        world.client().set_service_account_bounds(as_actor(&root, widen(7))).await.unwrap_err();
    assert_eq!(err.code(), Code::Aborted, "{err:?}");
    let mut malformed = widen(0);
    malformed.aws.as_mut().unwrap().resources = vec!["arn:*".into()];
    let err =
        world.client().set_service_account_bounds(as_actor(&root, malformed)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("aws.resources"), "{}", err.message());
    let read = world
        .client()
        .get_service_account_bounds(as_actor(&admin, GetServiceAccountBoundsRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read.version, 1, "the refused changes stored nothing");
    assert!(read.gcp.unwrap().unscoped);
}
