//! Bad input is refused through the gRPC API with a message naming the field and the problem,
//! and nothing already stored changes.

use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;
use tonic::Code;

use crate::support::Harness;

fn zone(
    name: &str,
    provider: common::Provider,
    region: &str,
    sizes: &[common::Size],
) -> pb::CreateZoneRequest {
    pb::CreateZoneRequest {
        name: name.into(),
        provider: provider as i32,
        region: region.into(),
        allowed_sizes: sizes.iter().map(|s| *s as i32).collect(),
    }
}

#[tokio::test]
async fn zones_names_regions_and_sizes() {
    let mut h = Harness::start().await;
    use common::Provider::{Aws, Gcp, Local, Unspecified};
    let cases = [
        (zone("Bad_Name", Local, "", &[]), Code::InvalidArgument, "name: \"Bad_Name\""),
        (zone("", Local, "", &[]), Code::InvalidArgument, "name: is required"),
        (zone("a-", Local, "", &[]), Code::InvalidArgument, "must not end with `-`"),
        (
            zone("x", Unspecified, "", &[]),
            Code::InvalidArgument,
            "provider: must be local, gcp or aws",
        ),
        (zone("x", Local, "us-east-1a", &[]), Code::InvalidArgument, "a local zone has no region"),
        (zone("x", Gcp, "us-east-1a", &[]), Code::InvalidArgument, "is not a GCP zone"),
        (
            zone("x", Aws, "us-central1-a", &[]),
            Code::InvalidArgument,
            "is not an AWS availability zone",
        ),
        (
            zone("x", Local, "", &[common::Size::Unspecified]),
            Code::InvalidArgument,
            "allowed_sizes: must be s",
        ),
    ];
    for (request, code, text) in cases {
        let status = h.client.create_zone(request.clone()).await.unwrap_err();
        assert_eq!(status.code(), code, "{request:?}: {status:?}");
        assert!(status.message().contains(text), "{request:?}: {}", status.message());
    }
    let listed = h.client.list_zones(pb::ListZonesRequest::default()).await.unwrap().into_inner();
    assert!(listed.zones.is_empty(), "nothing was stored: {listed:?}");

    let gcp = h
        .client
        .create_zone(zone("gcp-a", Gcp, "us-central1-a", &[common::Size::M, common::Size::S]))
        .await
        .unwrap();
    assert_eq!(gcp.get_ref().allowed_sizes, vec![common::Size::S as i32, common::Size::M as i32]);
    h.client.create_zone(zone("aws-a", Aws, "us-east-1a", &[])).await.unwrap();
    let again = h.client.create_zone(zone("gcp-a", Local, "", &[])).await.unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    let kept =
        h.client.get_zone(pb::GetZoneRequest { name: "gcp-a".into() }).await.unwrap().into_inner();
    assert_eq!(kept.region, "us-central1-a", "the existing zone is unchanged");

    // Creating a zone only creates the record: no directory, no process.
    assert!(!h.zones_dir().join("gcp-a").exists());
    // A zone whose provider has no cluster configured is recorded, but placements are refused.
    let placement = pb::EnsurePlacementRequest { group: "team".into(), zone: "gcp-a".into() };
    let refused = h.client.ensure_placement(placement).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
    assert!(
        refused.message().contains("gcp zone provider is not configured")
            && refused.message().contains("[kubernetes.clusters.<name>]"),
        "{}",
        refused.message()
    );
    h.stop().await;
}

#[tokio::test]
async fn placements_counts_sizes_and_cidrs() {
    let mut h = Harness::start().await;
    let sizes = [common::Size::S, common::Size::M];
    h.client.create_zone(zone("local-a", common::Provider::Local, "", &sizes)).await.unwrap();
    let bad_group = pb::EnsurePlacementRequest { group: "Team!".into(), zone: "local-a".into() };
    let status = h.client.ensure_placement(bad_group).await.unwrap_err();
    assert!(status.message().starts_with("group:"), "{}", status.message());
    let long = pb::EnsurePlacementRequest { group: "g".repeat(60), zone: "local-a".into() };
    assert!(h.client.ensure_placement(long).await.unwrap_err().message().contains("namespace"));
    let missing = pb::EnsurePlacementRequest { group: "team".into(), zone: "nowhere".into() };
    assert_eq!(h.client.ensure_placement(missing).await.unwrap_err().code(), Code::NotFound);

    let placement = h
        .client
        .ensure_placement(pb::EnsurePlacementRequest {
            group: "team".into(),
            zone: "local-a".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(placement.namespace, "ramen-team-local-a");
    assert_eq!((placement.worker_count, placement.max_workers), (1, 2));
    assert_eq!(placement.size, common::Size::S as i32, "the smallest allowed size");
    assert_eq!(placement.route, "/mcp/team");

    let count =
        |count| pb::SetWorkerCountRequest { group: "team".into(), zone: "local-a".into(), count };
    let zero = h.client.set_worker_count(count(0)).await.unwrap_err();
    assert!(zero.message().contains("count: must be at least 1"), "{}", zero.message());
    let many = h.client.set_worker_count(count(11)).await.unwrap_err();
    assert!(many.message().contains("above the maximum of 10"), "{}", many.message());
    let three = h.client.set_worker_count(count(3)).await.unwrap().into_inner();
    assert_eq!((three.worker_count, three.max_workers), (3, 6));

    let size = |size: common::Size| pb::SetSizeRequest {
        group: "team".into(),
        zone: "local-a".into(),
        size: size as i32,
    };
    let large = h.client.set_size(size(common::Size::L)).await.unwrap_err();
    assert_eq!(large.code(), Code::FailedPrecondition);
    assert!(
        large.message().contains("not allowed in zone `local-a` (allowed: s, m)"),
        "{}",
        large.message()
    );
    assert_eq!(
        h.client.set_size(size(common::Size::Unspecified)).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    assert_eq!(
        h.client.set_size(size(common::Size::M)).await.unwrap().into_inner().size,
        common::Size::M as i32
    );

    let scale = pb::ScaleTrackRequest {
        group: "team".into(),
        zone: "local-a".into(),
        track: common::Track::Worker as i32,
        replicas: 7,
        timeout: None,
    };
    let over = h.client.scale_track(scale).await.unwrap_err();
    assert!(over.message().contains("above this placement's maximum of 6"), "{}", over.message());

    let rules = |cidrs: &[&str]| pb::SetIpRulesRequest {
        group: "team".into(),
        zone: "local-a".into(),
        cidrs: cidrs.iter().map(|c| c.to_string()).collect(),
    };
    for (bad, text) in [
        (vec!["10.0.0.1/8"], "has host bits set; did you mean `10.0.0.0/8`?"),
        (vec!["300.1.1.1"], "`300.1.1.1` is not an IPv4/IPv6 address or CIDR"),
        (vec!["10.0.0.0/8", "fe80::/129"], "`fe80::/129` is not"),
    ] {
        let status = h.client.set_ip_rules(rules(&bad)).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().starts_with("cidrs:") && status.message().contains(text),
            "{}",
            status.message()
        );
    }
    let ok = h
        .client
        .set_ip_rules(rules(&["10.1.2.3", "2001:db8::/32", "::ffff:192.0.2.0/120"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.normalized, vec!["10.1.2.3/32", "2001:db8::/32", "192.0.2.0/24"]);
    assert!(!ok.rolled, "nothing runs yet, nothing to roll");
    let stored = h
        .client
        .get_placement(pb::GetPlacementRequest { group: "team".into(), zone: "local-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stored.ip_rules, ok.normalized, "a refused list never replaced the stored one");

    let restart = pb::RestartTrackRequest {
        group: "team".into(),
        zone: "local-a".into(),
        track: 1,
        timeout: None,
    };
    let nothing = h.client.restart_track(restart).await.unwrap_err();
    assert_eq!(nothing.code(), Code::FailedPrecondition);
    assert!(nothing.message().contains("no config has been written"), "{}", nothing.message());

    let audit = crate::support::details(&h.auth.audit.lock());
    assert!(
        audit.get("placement.set_ip_rules").copied().unwrap_or(0) >= 4,
        "failures are audited too: {audit:?}"
    );
    h.stop().await;
}
