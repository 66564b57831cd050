//! Load cells from many simulated nodes reporting over real NATS, served over gRPC.

use std::time::Duration;

use ramen_proto::common::v1::LoadState;
use ramen_proto::rebalancer::v1 as pb;
use ramen_rebalancer::model::Provider;
use ramen_testkit::eventually;

use crate::support::{Harness, StaticZones, node};

/// 4 groups × 5 zones × 20 nodes; group `quiet` stops reporting and goes `down`.
async fn report_round(h: &Harness, quiet_too: bool) {
    for (group, in_flight) in [("cool", 5), ("warm", 50), ("hot", 90), ("quiet", 50)] {
        if group == "quiet" && !quiet_too {
            continue;
        }
        for zone in 0..5 {
            for n in 0..20 {
                h.report(&node(group, &format!("z{zone}"), &format!("n{n}"), in_flight, 100)).await;
            }
        }
    }
}

async fn cells(h: &Harness, groups: &[&str]) -> Vec<pb::LoadCell> {
    let request = pb::ListLoadCellsRequest {
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..Default::default()
    };
    h.client.clone().list_load_cells(request).await.unwrap().into_inner().cells
}

#[tokio::test]
async fn cells_from_many_nodes_including_down_ones() {
    // `never` has a placement in z0 but no node of it ever reports.
    let zones = StaticZones::with(&[("z0", Provider::Local, "")], "never");
    let h = Harness::start(zones, |_, _| {}).await;
    report_round(&h, true).await;
    eventually("every reported cell is served", Duration::from_secs(10), || async {
        let all = cells(&h, &[]).await;
        if all.len() == 21 && all.iter().all(|c| c.group == "never" || c.live_nodes == 20) {
            Ok(())
        } else {
            Err(all.len())
        }
    })
    .await;

    // `quiet` falls silent; the others keep reporting past its liveness window (1.5 s).
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        report_round(&h, false).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let state = |cells: &[pb::LoadCell], group: &str| {
        cells.iter().find(|c| c.group == group && c.zone == "z3").map(|c| c.state())
    };
    let all = eventually("quiet goes down", Duration::from_secs(5), || async {
        let all = cells(&h, &[]).await;
        if state(&all, "quiet") == Some(LoadState::Down) {
            Ok(all)
        } else {
            Err(state(&all, "quiet"))
        }
    })
    .await;
    assert_eq!(state(&all, "cool"), Some(LoadState::Low));
    assert_eq!(state(&all, "warm"), Some(LoadState::Even));
    assert_eq!(state(&all, "hot"), Some(LoadState::High));
    let never = all.iter().find(|c| c.group == "never").unwrap();
    assert_eq!(
        (never.state(), never.live_nodes, never.min_workers, never.max_workers),
        (LoadState::Down, 0, 1, 2)
    );
    assert!(never.last_report_at.is_none());

    // The numbers behind a cell, and its nodes (a down cell keeps its recently silent ones).
    let hot = all.iter().find(|c| c.group == "hot" && c.zone == "z1").unwrap();
    assert_eq!((hot.live_nodes, hot.in_flight, hot.cap), (20, 1800, 2000));
    assert!((hot.utilization - 0.9).abs() < 1e-9);
    assert_eq!(hot.nodes.len(), 20);
    let quiet = h
        .client
        .clone()
        .get_load_cell(pb::GetLoadCellRequest { group: "quiet".into(), zone: "z0".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((quiet.live_nodes, quiet.nodes.len()), (0, 20));
    assert!(quiet.nodes.iter().all(|n| !n.ready), "silent nodes are not ready");

    // What the gateway passes: only the caller's groups.
    let mine = cells(&h, &["hot", "cool"]).await;
    assert_eq!(mine.len(), 10);
    assert!(mine.iter().all(|c| c.group == "hot" || c.group == "cool"));
    let missing = h
        .client
        .clone()
        .get_load_cell(pb::GetLoadCellRequest { group: "nobody".into(), zone: "z0".into() })
        .await;
    assert_eq!(missing.unwrap_err().code(), tonic::Code::NotFound);
}

/// A node's NATS user may publish only its own placement's subject; a report on it that claims
/// another placement (a tenant's code trying to make a victim's cell look overloaded) is
/// dropped and counted, and the victim's cell shows only its own nodes.
#[tokio::test]
async fn a_report_naming_another_placement_than_its_subject_is_dropped() {
    let zones = StaticZones::with(&[("z0", Provider::Local, "")], "victim");
    let h = Harness::start(zones, |_, _| {}).await;
    for n in 0..5 {
        let forged = node("victim", "z0", &format!("forged-{n}"), 100, 100);
        h.report_as("evil", "z0", &forged).await;
    }
    h.report(&node("victim", "z0", "real", 10, 100)).await;
    let dropped = || {
        let text = h.platform.metrics.encode();
        text.lines()
            .find(|l| l.starts_with("ramen_rebalancer_load_reports_dropped_total "))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let victim = eventually(
        "the real report filed, the forged ones dropped",
        Duration::from_secs(10),
        || async {
            let all = cells(&h, &["victim"]).await;
            match all.first() {
                Some(cell) if cell.last_report_at.is_some() && dropped() == 5 => Ok(cell.clone()),
                other => Err((other.map(|c| c.live_nodes), dropped())),
            }
        },
    )
    .await;
    assert_eq!((victim.live_nodes, victim.in_flight), (1, 10), "only the victim's own node");
    assert!(cells(&h, &["evil"]).await.is_empty(), "nothing filed under the sender either");
}
