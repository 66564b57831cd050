//! Load cells: the nodes' reports (core NATS `ramen.load.v1.node`) filed in memory by one
//! ingest task, and every cell recomputed each `recompute_interval` into an immutable
//! [`Snapshot`] that readers take without locking. Every replica keeps its own table (core
//! NATS fans each report out to all of them), so any replica answers for every cell.

mod ingest;
mod metrics;
mod table;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use ramen_proto::events::v1::NodeLoadReport;

pub use ingest::spawn_ingest;
pub use metrics::CellMetrics;
pub use table::{NodeSlot, Sums};

use crate::catalog::Catalog;
use crate::model::{LoadState, now_ms};
use crate::settings::Settings;
use crate::weights::TargetLoad;
use table::LoadTable;

/// One cell as served: the state and the numbers behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct CellView {
    pub group: String,
    pub zone: String,
    pub state: LoadState,
    pub live_nodes: u32,
    pub in_flight: u64,
    pub cap: u64,
    /// in_flight / cap; 0 when cap is 0.
    pub utilization: f64,
    /// Newest report of any node of the cell (0 = none ever).
    pub last_report_ms: i64,
    pub min_workers: u32,
    pub max_workers: u32,
    pub desired_workers: u32,
    /// Ready stable workers as the zone-manager counts them (0 when unknown).
    pub stable_workers: u32,
    /// The zone's cluster scales the stable track itself (a Kubernetes zone's HPA, between the
    /// same bounds): ramen's autoscaler leaves it alone, so two controllers never fight over
    /// one replica count.
    pub cluster_autoscaled: bool,
}

/// Every cell at one instant, sorted by (group, zone).
#[derive(Debug, Default)]
pub struct Snapshot {
    pub cells: BTreeMap<(String, String), CellView>,
    pub computed_ms: i64,
    /// How long the recompute took.
    pub took: Duration,
    pub nodes: usize,
}

/// A node of a cell, for the per-node breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    pub node_id: String,
    pub slot: NodeSlot,
    pub live: bool,
}

pub struct LoadCells {
    table: Mutex<LoadTable>,
    snapshot: ArcSwap<Snapshot>,
    settings: Settings,
    pub metrics: CellMetrics,
}

impl LoadCells {
    pub fn new(settings: Settings, metrics: CellMetrics) -> Self {
        Self { table: Mutex::default(), snapshot: ArcSwap::default(), settings, metrics }
    }

    pub fn ingest(&self, report: &NodeLoadReport) {
        self.ingest_at(report, now_ms());
    }

    pub fn ingest_at(&self, report: &NodeLoadReport, seen_ms: i64) {
        self.table.lock().ingest(report, seen_ms);
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Recomputes every cell at `now`: the reported ones, plus every active placement of the
    /// catalog (a placement none of whose nodes reports is `down`). `desired` is the
    /// autoscaler's target where it has one.
    pub fn recompute(
        &self,
        now: i64,
        catalog: &Catalog,
        desired: impl Fn(&str, &str) -> Option<u32>,
    ) -> Arc<Snapshot> {
        let started = Instant::now();
        let live_since = now - self.settings.liveness.as_millis() as i64;
        let forget_before = now - self.settings.forget_after.as_millis() as i64;
        let mut reported = Vec::new();
        let nodes = {
            let mut table = self.table.lock();
            table.sweep(live_since, forget_before, |g, z, sums| {
                reported.push((g.to_owned(), z.to_owned(), sums))
            });
            table.node_count()
        };
        let mut cells = BTreeMap::new();
        for (group, zone, sums) in reported {
            let view = view(&group, &zone, sums, catalog, &desired);
            cells.insert((group, zone), view);
        }
        for (key, placement) in catalog.placements.iter().filter(|(_, p)| p.active) {
            if !cells.contains_key(key) {
                let view =
                    view(&placement.group, &placement.zone, Sums::default(), catalog, &desired);
                cells.insert(key.clone(), view);
            }
        }
        let took = started.elapsed();
        self.metrics.observe(took, nodes, cells.len());
        let snapshot = Arc::new(Snapshot { cells, computed_ms: now, took, nodes });
        self.snapshot.store(snapshot.clone());
        snapshot
    }

    /// The cell's nodes (live and recently silent), sorted by id.
    pub fn nodes(&self, group: &str, zone: &str) -> Vec<NodeView> {
        let live_since = now_ms() - self.settings.liveness.as_millis() as i64;
        let table = self.table.lock();
        let Some(cell) = table.cell(group, zone) else { return Vec::new() };
        let mut nodes: Vec<NodeView> = cell
            .nodes
            .iter()
            .map(|(id, slot)| NodeView {
                node_id: id.clone(),
                slot: *slot,
                live: slot.seen_ms >= live_since,
            })
            .collect();
        nodes.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        nodes
    }

    /// The measured load of one node (a worker behind the local edge), now.
    pub fn node_load(&self, group: &str, zone: &str, node: &str) -> TargetLoad {
        let live_since = now_ms() - self.settings.liveness.as_millis() as i64;
        let table = self.table.lock();
        let slot = table.cell(group, zone).and_then(|c| c.nodes.get(node));
        match slot {
            Some(s) if s.seen_ms >= live_since && s.serving() => TargetLoad {
                target: node.to_owned(),
                live: true,
                in_flight: s.in_flight,
                cap: s.cap,
            },
            _ => TargetLoad { target: node.to_owned(), live: false, in_flight: 0, cap: 0 },
        }
    }

    /// The measured load of a whole cell (a zone behind a cloud balancer), now.
    pub fn cell_load(&self, group: &str, zone: &str, target: &str) -> TargetLoad {
        let live_since = now_ms() - self.settings.liveness.as_millis() as i64;
        let table = self.table.lock();
        let mut load = TargetLoad { target: target.to_owned(), live: false, in_flight: 0, cap: 0 };
        for slot in table.cell(group, zone).map(|c| c.nodes.values()).into_iter().flatten() {
            if slot.seen_ms >= live_since && slot.serving() {
                load.live = true;
                load.in_flight = load.in_flight.saturating_add(slot.in_flight);
                load.cap = load.cap.saturating_add(slot.cap);
            }
        }
        load
    }
}

fn view(
    group: &str,
    zone: &str,
    sums: Sums,
    catalog: &Catalog,
    desired: &impl Fn(&str, &str) -> Option<u32>,
) -> CellView {
    let placement = catalog.placements.get(&(group.to_owned(), zone.to_owned()));
    let (min, max, workers) =
        placement.map(|p| (p.worker_count, p.max_workers, p.stable_workers)).unwrap_or_default();
    let utilization = if sums.cap == 0 { 0.0 } else { sums.in_flight as f64 / sums.cap as f64 };
    let cluster_autoscaled =
        catalog.zones.get(zone).is_some_and(|z| z.provider != crate::model::Provider::Local);
    CellView {
        group: group.to_owned(),
        zone: zone.to_owned(),
        state: LoadState::classify(sums.in_flight, sums.cap),
        live_nodes: sums.live_nodes,
        in_flight: sums.in_flight,
        cap: sums.cap,
        utilization,
        last_report_ms: sums.last_seen_ms,
        min_workers: min,
        max_workers: max,
        // Without an autoscaler target (another replica runs it, or it has not acted yet)
        // the running stable workers, within the placement's bounds, are what it keeps.
        desired_workers: desired(group, zone).unwrap_or(if workers == 0 {
            0
        } else {
            workers.clamp(min, max.max(min))
        }),
        stable_workers: workers,
        cluster_autoscaled,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
