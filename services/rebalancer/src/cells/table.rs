//! The latest report of every node, grouped group → zone → node so that a report is filed
//! with three borrowed-key lookups and no allocation once its node is known, and a full
//! recompute is one pass over flat maps. The maps hash with foldhash (randomly seeded, several
//! times cheaper than SipHash on these short keys): 5,000 reports a second at 10,000 nodes.

use std::collections::HashMap as StdHashMap;

use ramen_proto::common::v1::Track;
use ramen_proto::events::v1::NodeLoadReport;

type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;

/// What the table keeps of a node's latest report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSlot {
    pub stable: bool,
    pub in_flight: u32,
    pub cap: u32,
    pub ready: bool,
    pub draining: bool,
    /// When the node measured (its clock).
    pub measured_ms: i64,
    /// When this process received it (its clock): what liveness is judged by.
    pub seen_ms: i64,
}

impl NodeSlot {
    fn from_report(report: &NodeLoadReport, seen_ms: i64) -> Self {
        Self {
            stable: report.track() != Track::WorkerCanary,
            in_flight: report.in_flight,
            cap: report.cap,
            ready: report.ready,
            draining: report.draining,
            measured_ms: report.at_unix_ms,
            seen_ms,
        }
    }

    /// Takes new calls from the edge: a stable node, ready, not draining.
    pub fn serving(&self) -> bool {
        self.stable && self.ready && !self.draining
    }
}

/// Aggregates of one cell over its live nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    /// Stable nodes that reported within the liveness window.
    pub live_nodes: u32,
    /// Over serving nodes only (a draining or unready node takes no new work).
    pub serving_nodes: u32,
    pub in_flight: u64,
    pub cap: u64,
    /// Newest receive time of any node of the cell (0 = none).
    pub last_seen_ms: i64,
}

#[derive(Default)]
pub struct Cell {
    pub nodes: HashMap<String, NodeSlot>,
}

#[derive(Default)]
pub struct LoadTable {
    groups: HashMap<String, HashMap<String, Cell>>,
    nodes: usize,
}

impl LoadTable {
    /// Files a report. Reports without a group, zone or node id are ignored.
    pub fn ingest(&mut self, report: &NodeLoadReport, seen_ms: i64) {
        if report.group.is_empty() || report.zone.is_empty() || report.node_id.is_empty() {
            return;
        }
        let slot = NodeSlot::from_report(report, seen_ms);
        let zones = match self.groups.get_mut(report.group.as_str()) {
            Some(zones) => zones,
            None => self.groups.entry(report.group.clone()).or_default(),
        };
        let cell = match zones.get_mut(report.zone.as_str()) {
            Some(cell) => cell,
            None => zones.entry(report.zone.clone()).or_default(),
        };
        match cell.nodes.get_mut(report.node_id.as_str()) {
            Some(existing) => *existing = slot,
            None => {
                cell.nodes.insert(report.node_id.clone(), slot);
                self.nodes += 1;
            }
        }
    }

    pub fn node_count(&self) -> usize {
        self.nodes
    }

    pub fn cell(&self, group: &str, zone: &str) -> Option<&Cell> {
        self.groups.get(group)?.get(zone)
    }

    /// One pass over every node: forgets nodes silent since before `forget_before` (and cells
    /// left empty), and calls `each` with every cell's sums over nodes seen since
    /// `live_since`.
    pub fn sweep(
        &mut self,
        live_since: i64,
        forget_before: i64,
        mut each: impl FnMut(&str, &str, Sums),
    ) {
        let mut forgotten = 0;
        self.groups.retain(|group, zones| {
            zones.retain(|zone, cell| {
                let before = cell.nodes.len();
                cell.nodes.retain(|_, slot| slot.seen_ms >= forget_before);
                forgotten += before - cell.nodes.len();
                if cell.nodes.is_empty() {
                    return false;
                }
                each(group, zone, sums(cell, live_since));
                true
            });
            !zones.is_empty()
        });
        self.nodes -= forgotten;
    }
}

fn sums(cell: &Cell, live_since: i64) -> Sums {
    let mut sums = Sums::default();
    for slot in cell.nodes.values() {
        sums.last_seen_ms = sums.last_seen_ms.max(slot.seen_ms);
        if slot.seen_ms < live_since || !slot.stable {
            continue;
        }
        sums.live_nodes += 1;
        if slot.serving() {
            sums.serving_nodes += 1;
            sums.in_flight += u64::from(slot.in_flight);
            sums.cap += u64::from(slot.cap);
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(group: &str, zone: &str, node: &str, in_flight: u32) -> NodeLoadReport {
        NodeLoadReport {
            node_id: node.into(),
            group: group.into(),
            zone: zone.into(),
            track: Track::Worker as i32,
            in_flight,
            cap: 10,
            ready: true,
            ..Default::default()
        }
    }

    #[test]
    fn latest_report_wins_and_silent_nodes_are_forgotten() {
        let mut table = LoadTable::default();
        table.ingest(&report("g", "z", "n1", 1), 1_000);
        table.ingest(&report("g", "z", "n1", 7), 2_000);
        table.ingest(&report("g", "z", "n2", 2), 100);
        table.ingest(&report("", "z", "n3", 2), 2_000);
        assert_eq!(table.node_count(), 2);
        let mut seen = Vec::new();
        table.sweep(1_500, 500, |g, z, s| seen.push((g.to_owned(), z.to_owned(), s)));
        assert_eq!(table.node_count(), 1, "n2 was silent past forget_after");
        let (_, _, sums) = &seen[0];
        assert_eq!((sums.live_nodes, sums.in_flight, sums.cap), (1, 7, 10));
        table.sweep(5_000, 3_000, |_, _, _| panic!("no cell is left"));
        assert_eq!(table.node_count(), 0);
    }

    #[test]
    fn draining_unready_and_canary_nodes_add_no_capacity() {
        let mut table = LoadTable::default();
        table.ingest(&report("g", "z", "ok", 3), 10);
        table.ingest(&NodeLoadReport { draining: true, ..report("g", "z", "drain", 9) }, 10);
        table.ingest(&NodeLoadReport { ready: false, ..report("g", "z", "cold", 9) }, 10);
        let canary =
            NodeLoadReport { track: Track::WorkerCanary as i32, ..report("g", "z", "c", 9) };
        table.ingest(&canary, 10);
        let mut sums = None;
        table.sweep(0, 0, |_, _, s| sums = Some(s));
        let sums = sums.unwrap();
        assert_eq!((sums.live_nodes, sums.serving_nodes), (3, 1));
        assert_eq!((sums.in_flight, sums.cap), (3, 10));
    }
}
