//! The GCP balancer against the Compute API stand-in: the patch's operation is still running, so
//! Rebalance first answers `applied: false`; the background retry follows the operation until
//! it is done, and the outcome reaches the audit log and the bus.

use std::time::Duration;

use ramen_proto::events::v1::RebalanceApplied;
use ramen_proto::rebalancer::v1 as pb;
use ramen_rebalancer::lb::GcpSettings;
use ramen_rebalancer::model::Provider;
use ramen_testkit::eventually;

use crate::gcp_standin::{Compute, ComputeStandIn, PROJECT, neg_url};
use crate::support::{Harness, Reporting, StaticZones, node};

pub fn compute(running_polls: u32) -> Compute {
    let mut compute = Compute { running_polls, ..Compute::default() };
    let backends = vec![
        (neg_url("us-central1-a", "ramen-team-gcp-a"), 1.0),
        (neg_url("us-central1-b", "ramen-team-gcp-b"), 1.0),
        // Not a ramen backend: left as it is.
        (neg_url("us-central1-c", "legacy-neg"), 0.5),
    ];
    compute.services.insert("ramen-team".into(), backends);
    compute
}

pub async fn gcp_harness(standin: &ComputeStandIn) -> Harness {
    let zones = StaticZones::with(
        &[("gcp-a", Provider::Gcp, "us-central1-a"), ("gcp-b", Provider::Gcp, "us-central1-b")],
        "team",
    );
    let endpoint = standin.url.clone();
    Harness::start(zones, move |_, ports| {
        ports.gcp = GcpSettings { project: PROJECT.into(), endpoint, anonymous: true };
    })
    .await
}

/// gcp-a is busy (45 of 50 per node), gcp-b idle (5 of 50): headroom 10 vs 90.
pub async fn report_load(h: &Harness) -> Reporting {
    let nodes = (0..2).flat_map(|n| {
        [
            node("team", "gcp-a", &format!("a{n}"), 45, 50),
            node("team", "gcp-b", &format!("b{n}"), 5, 50),
        ]
    });
    let reporting = h.keep_reporting(nodes.collect());
    eventually("both cells live", Duration::from_secs(10), || async {
        let cells = h
            .client
            .clone()
            .list_load_cells(pb::ListLoadCellsRequest::default())
            .await
            .unwrap()
            .into_inner()
            .cells;
        if cells.iter().filter(|c| c.live_nodes == 2).count() == 2 { Ok(()) } else { Err(cells) }
    })
    .await;
    reporting
}

#[tokio::test]
async fn in_progress_operation_answers_not_applied_then_the_retry_applies_it() {
    let standin = ComputeStandIn::start(compute(2)).await;
    let h = gcp_harness(&standin).await;
    let mut applied_events =
        h.observer.subscribe(&ramen_service::subject::<RebalanceApplied>()).await.unwrap();
    let _nodes = report_load(&h).await;

    let request = ramen_clients::fakes::super_admin("u-alice")
        .request(pb::RebalanceRequest { group: "team".into(), zone: "gcp-a".into() });
    let answer = h.client.clone().rebalance(request).await.unwrap().into_inner();
    assert!(!answer.applied, "{answer:?}");
    assert!(answer.note.contains("RUNNING") && answer.note.contains("retrying"), "{}", answer.note);
    let weights: Vec<(String, u32)> =
        answer.weights.iter().map(|w| (w.target.clone(), w.weight_permille)).collect();
    assert_eq!(weights, vec![("ramen-team-gcp-a".into(), 111), ("ramen-team-gcp-b".into(), 1000)]);
    assert_eq!(standin.scalers("ramen-team")[0].1, 1.0, "not in effect while the operation runs");

    let action = eventually("the background retry applies it", Duration::from_secs(20), || async {
        let get = pb::GetRebalanceActionRequest { action_id: answer.action_id.clone() };
        let action = h.client.clone().get_rebalance_action(get).await.unwrap().into_inner();
        if action.applied { Ok(action) } else { Err(action) }
    })
    .await;
    assert_eq!(action.state(), pb::RebalanceState::Applied);
    assert!(action.attempts >= 2, "{action:?}");
    assert_eq!(action.actor, "u-alice");
    let scalers = standin.scalers("ramen-team");
    assert!((scalers[0].1 - 0.111).abs() < 1e-3, "{scalers:?}");
    assert!((scalers[1].1 - 1.0).abs() < 1e-6, "{scalers:?}");
    assert_eq!(scalers[2].1, 0.5, "a backend that is not ramen's keeps its scaler");
    assert_eq!(
        standin.state.lock().patches,
        1,
        "retries follow the operation instead of patching again"
    );

    // The zone's status on the bus, and the audit log.
    let event = tokio::time::timeout(Duration::from_secs(5), applied_events.next())
        .await
        .unwrap()
        .unwrap()
        .payload;
    assert_eq!(
        (event.action_id.as_str(), event.applied, event.group.as_str()),
        (answer.action_id.as_str(), true, "team")
    );
    let entries = eventually("both audit entries", Duration::from_secs(5), || async {
        let entries = h.audit("u-alice", "placement.rebalance").await;
        if entries.len() == 2 { Ok(entries) } else { Err(entries) }
    })
    .await;
    assert_eq!(entries[0].action, "placement.rebalance.applied");
    assert_eq!(entries[1].action, "placement.rebalance");
    assert_eq!(entries[1].details["applied"], "false");
    assert_eq!((entries[0].group.as_str(), entries[0].target.as_str()), ("team", "zone/gcp-a"));
}

#[tokio::test]
async fn a_missing_backend_is_refused_and_audited() {
    let standin = ComputeStandIn::start(compute(0)).await;
    let h = gcp_harness(&standin).await;
    let _nodes = report_load(&h).await;
    standin.state.lock().services.get_mut("ramen-team").unwrap().remove(0);
    let request = ramen_clients::fakes::super_admin("u-bob")
        .request(pb::RebalanceRequest { group: "team".into(), zone: "gcp-a".into() });
    let err = h.client.clone().rebalance(request).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert!(err.message().contains("ramen-team-gcp-a"), "{}", err.message());
    let entries = eventually("the refusal is audited", Duration::from_secs(5), || async {
        let entries = h.audit("u-bob", "placement.rebalance").await;
        if entries.len() == 1 { Ok(entries) } else { Err(entries) }
    })
    .await;
    assert_eq!(entries[0].outcome(), ramen_proto::common::v1::AuditOutcome::Failure);

    // With the backend back and a finished operation, the first answer is applied.
    standin
        .state
        .lock()
        .services
        .insert("ramen-team".into(), compute(0).services["ramen-team"].clone());
    let answer = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "gcp-b".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(answer.applied, "{answer:?}");
}

/// The route `ramen-cloud` makes for GKE zones: the weights go to the capacity scalers of the
/// group's backend service; the zones' own (pinned) backend services keep theirs.
#[tokio::test]
async fn the_groups_backend_service_made_by_ramen_cloud_follows_measured_load() {
    use ramen_cloud::ZoneCloud;
    use ramen_cloud::testing::gcp::{GoogleStandIn, PROJECT as CLOUD_PROJECT};

    let google = GoogleStandIn::start().await;
    let cluster = google.cluster();
    let cloud = google.cloud();
    for (zone, location) in [("gcp-a", "us-central1-a"), ("gcp-b", "us-central1-b")] {
        let namespace = format!("ramen-team-{zone}");
        let placement = google.placement(&cluster, "team", zone, &namespace, location);
        cloud.ensure_route(&placement).await.unwrap();
        google.add_neg(location, &namespace);
        cloud.sync_targets(&placement, &["10.8.0.1".parse().unwrap()]).await.unwrap();
    }
    // The scalers' patch is an operation that runs a while.
    google.state.lock().running_for = Duration::from_millis(300);
    let zones = StaticZones::with(
        &[("gcp-a", Provider::Gcp, "us-central1-a"), ("gcp-b", Provider::Gcp, "us-central1-b")],
        "team",
    );
    let endpoint = google.url.clone();
    let h = Harness::start(zones, move |_, ports| {
        ports.gcp = GcpSettings { project: CLOUD_PROJECT.into(), endpoint, anonymous: true };
    })
    .await;
    let _nodes = report_load(&h).await;
    let request = ramen_clients::fakes::super_admin("u-alice")
        .request(pb::RebalanceRequest { group: "team".into(), zone: "gcp-a".into() });
    h.client.clone().rebalance(request).await.unwrap();
    eventually("the group's scalers follow the load", Duration::from_secs(30), || async {
        let backends = google.backends("ramen-team");
        let close = |got: f64, want: f64| (got - want).abs() < 0.001;
        match backends.as_slice() {
            [(a, sa), (b, sb)]
                if a == "ramen-team-gcp-a"
                    && b == "ramen-team-gcp-b"
                    && close(*sa, 0.111)
                    && close(*sb, 1.0) =>
            {
                Ok(())
            }
            _ => Err(format!("{backends:?}")),
        }
    })
    .await;
    for zone in ["gcp-a", "gcp-b"] {
        let pinned = google.backends(&format!("ramen-team-{zone}"));
        assert_eq!(pinned, [(format!("ramen-team-{zone}"), 1.0)], "pinned traffic keeps its zone");
    }
}
