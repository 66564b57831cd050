//! The autoscaler on the real zone-manager: sustained `high` adds a stable worker (up to
//! 2 × count), sustained `low` removes it again, and it never goes below the count. The load
//! comes from simulated nodes of the same cell (a real worker reports 0 in flight beside them).

use std::time::Duration;

use ramen_proto::rebalancer::v1 as pb;
use ramen_testkit::eventually;

use ramen_rebalancer::model::Provider;

use crate::support::{Harness, StaticZones, node};

#[tokio::test]
async fn scales_up_after_sustained_high_and_back_down_after_sustained_low() {
    let h = Harness::with_zone_manager(|config, _| {
        config.rebalancer.scale_up_after = Duration::from_secs(2);
        config.rebalancer.scale_down_after = Duration::from_secs(4);
    })
    .await;
    assert_eq!(h.deploy("team", "local-a", 1).await.len(), 1);
    let busy: Vec<_> =
        (0..10).map(|n| node("team", "local-a", &format!("sim-{n}"), 63, 64)).collect();
    let reporting = h.keep_reporting(busy);

    let workers =
        eventually("sustained high adds a ready worker", Duration::from_secs(90), || async {
            let workers = h.stable_workers("team", "local-a").await;
            let ready = workers
                .iter()
                .filter(|w| w.state() == ramen_proto::common::v1::WorkerState::Ready)
                .count();
            if ready == 2 {
                return Ok(workers);
            }
            let get = pb::GetLoadCellRequest { group: "team".into(), zone: "local-a".into() };
            let cell = h.client.clone().get_load_cell(get).await.map(|c| c.into_inner());
            let status = h
                .client
                .clone()
                .get_scheduler_status(pb::GetSchedulerStatusRequest {})
                .await
                .map(|s| s.into_inner());
            let cell = cell
                .map(|c| (c.state, c.live_nodes, c.min_workers, c.max_workers, c.desired_workers));
            Err(format!(
                "{} workers; cell {cell:?}; leader {:?}; audit {:?}",
                workers.len(),
                status.map(|s| s.is_leader),
                h.audit("scheduler", "").await
            ))
        })
        .await;
    assert!(workers.iter().all(|w| !w.mcp_address.is_empty()));
    // Never above 2 × count, however long the load lasts.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(h.stable_workers("team", "local-a").await.len(), 2);
    let cell = h
        .client
        .clone()
        .get_load_cell(pb::GetLoadCellRequest { group: "team".into(), zone: "local-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((cell.min_workers, cell.max_workers, cell.desired_workers), (1, 2, 2), "{cell:?}");

    drop(reporting);
    let idle: Vec<_> =
        (0..10).map(|n| node("team", "local-a", &format!("sim-{n}"), 0, 64)).collect();
    let _idle = h.keep_reporting(idle);
    eventually("sustained low removes it", Duration::from_secs(90), || async {
        let n = h.stable_workers("team", "local-a").await.len();
        if n == 1 { Ok(()) } else { Err(n) }
    })
    .await;
    // Low for several more windows: the count is the floor.
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert_eq!(h.stable_workers("team", "local-a").await.len(), 1);

    let steps = h.audit("scheduler", "placement.autoscale").await;
    let moves: Vec<(String, String)> =
        steps.iter().rev().map(|e| (e.details["from"].clone(), e.details["to"].clone())).collect();
    assert_eq!(moves, vec![("1".into(), "2".into()), ("2".into(), "1".into())], "{steps:?}");
    assert!(steps.iter().all(|e| e.outcome() == ramen_proto::common::v1::AuditOutcome::Success));
}

/// A Kubernetes zone's HPA owns its stable replicas (same bounds): under the same sustained
/// load, the autoscaler scales the local zone and never the cloud one.
#[tokio::test]
async fn cloud_zones_are_left_to_their_cluster_autoscaler() {
    let zones = StaticZones::with(
        &[("local-z", Provider::Local, ""), ("gke-z", Provider::Gcp, "us-central1-a")],
        "team",
    );
    let h = Harness::start(zones.clone(), |config, _| {
        config.rebalancer.scale_up_after = Duration::from_secs(1);
    })
    .await;
    let busy: Vec<_> = ["local-z", "gke-z"]
        .iter()
        .flat_map(|zone| (0..4).map(move |n| node("team", zone, &format!("{zone}-{n}"), 63, 64)))
        .collect();
    let _reporting = h.keep_reporting(busy);
    eventually("the local zone is scaled up", Duration::from_secs(60), || async {
        let scaled = zones.scaled.lock().clone();
        if scaled.iter().any(|(_, zone, to)| zone == "local-z" && *to == 2) {
            Ok(())
        } else {
            Err(scaled)
        }
    })
    .await;
    // Both cells were high for the same windows; a few more pass with no step on the cloud one.
    let audit = eventually("the local step is audited", Duration::from_secs(30), || async {
        let steps = h.audit("scheduler", "placement.autoscale").await;
        if steps.is_empty() { Err("no step yet".to_owned()) } else { Ok(steps) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let scaled = zones.scaled.lock().clone();
    assert!(scaled.iter().all(|(_, zone, _)| zone == "local-z"), "{scaled:?}");
    assert!(audit.iter().all(|e| e.target.contains("local-z")), "{audit:?}");
}
