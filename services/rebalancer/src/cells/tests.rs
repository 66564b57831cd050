use std::time::Duration;

use ramen_config::RebalancerConfig;
use ramen_proto::common::v1::Track;

use super::*;
use crate::catalog::Catalog;
use crate::ports::PlacementInfo;

fn cells() -> LoadCells {
    let settings = Settings::from_config(&RebalancerConfig::default()).unwrap();
    LoadCells::new(settings, CellMetrics::default())
}

fn report(group: &str, zone: &str, node: usize, in_flight: u32) -> NodeLoadReport {
    NodeLoadReport {
        node_id: format!("n{node}"),
        group: group.into(),
        zone: zone.into(),
        track: Track::Worker as i32,
        in_flight,
        cap: 100,
        ready: true,
        ..Default::default()
    }
}

fn placement(group: &str, zone: &str, count: u32) -> ((String, String), PlacementInfo) {
    let info = PlacementInfo {
        group: group.into(),
        zone: zone.into(),
        worker_count: count,
        max_workers: 2 * count,
        active: true,
        stable_workers: 4,
    };
    ((group.into(), zone.into()), info)
}

#[test]
fn many_nodes_make_low_even_high_and_down_cells() {
    let cells = cells();
    let now = 1_000_000;
    // 40 cells × 250 nodes; the load of a cell's nodes sets its state.
    for c in 0..40 {
        let (group, in_flight) = match c % 4 {
            0 => ("low", 10),
            1 => ("even", 50),
            2 => ("high", 95),
            _ => ("stale", 50),
        };
        // The stale cells last reported 10 s ago: past the 6 s liveness window.
        let seen = if group == "stale" { now - 10_000 } else { now - 1_000 };
        for n in 0..250 {
            cells.ingest_at(&report(group, &format!("z{c}"), n, in_flight), seen);
        }
    }
    let catalog = Catalog {
        placements: [placement("never", "z0", 2), placement("low", "z0", 3)].into(),
        ..Catalog::default()
    };
    let snapshot = cells.recompute(now, &catalog, |_, _| None);
    assert_eq!(snapshot.nodes, 10_000);
    assert_eq!(snapshot.cells.len(), 41, "40 reported cells and one placement that never reported");
    let state = |g: &str, z: &str| snapshot.cells[&(g.to_owned(), z.to_owned())].state;
    assert_eq!(state("low", "z0"), LoadState::Low);
    assert_eq!(state("even", "z1"), LoadState::Even);
    assert_eq!(state("high", "z2"), LoadState::High);
    assert_eq!(state("stale", "z3"), LoadState::Down);
    assert_eq!(state("never", "z0"), LoadState::Down);
    let high = &snapshot.cells[&("high".to_owned(), "z2".to_owned())];
    assert_eq!((high.live_nodes, high.in_flight, high.cap), (250, 95 * 250, 100 * 250));
    assert!((high.utilization - 0.95).abs() < 1e-9);
    let low = &snapshot.cells[&("low".to_owned(), "z0".to_owned())];
    assert_eq!(
        (low.min_workers, low.max_workers, low.desired_workers, low.stable_workers),
        (3, 6, 4, 4)
    );
    let stale = &snapshot.cells[&("stale".to_owned(), "z3".to_owned())];
    assert_eq!((stale.live_nodes, stale.last_report_ms), (0, now - 10_000));
    assert!(snapshot.took < Duration::from_millis(500), "{:?}", snapshot.took);
}

#[test]
fn a_node_back_from_silence_counts_again_and_long_silence_is_forgotten() {
    let cells = cells();
    cells.ingest_at(&report("g", "z", 1, 90), 0);
    let snapshot = cells.recompute(7_000, &Catalog::default(), |_, _| None);
    assert_eq!(snapshot.cells[&("g".to_owned(), "z".to_owned())].state, LoadState::Down);
    assert_eq!(cells.nodes("g", "z").len(), 1, "still in the breakdown");
    cells.ingest_at(&report("g", "z", 1, 90), 7_500);
    let snapshot = cells.recompute(8_000, &Catalog::default(), |_, _| None);
    assert_eq!(snapshot.cells[&("g".to_owned(), "z".to_owned())].state, LoadState::High);
    let snapshot = cells.recompute(7_500 + 301_000, &Catalog::default(), |_, _| None);
    assert!(snapshot.cells.is_empty(), "silent past forget_after");
}
