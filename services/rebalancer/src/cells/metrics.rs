//! `ramen_rebalancer_*` metrics of the load cells (the benchmark reads them from `/metrics`).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use ramen_telemetry::Metrics;

#[derive(Clone)]
pub struct CellMetrics {
    pub reports: Counter,
    /// Reports whose payload names another placement than their subject (forged, or a
    /// broken node): dropped.
    pub dropped: Counter,
    pub recompute: Histogram,
    pub last_recompute: Gauge<f64, AtomicU64>,
    pub nodes: Gauge,
    pub cells: Gauge,
}

impl Default for CellMetrics {
    fn default() -> Self {
        Self {
            reports: Counter::default(),
            dropped: Counter::default(),
            // 10 µs .. ~1.3 s.
            recompute: Histogram::new(exponential_buckets(0.00001, 2.0, 18)),
            last_recompute: Gauge::default(),
            nodes: Gauge::default(),
            cells: Gauge::default(),
        }
    }
}

impl CellMetrics {
    pub fn register(metrics: &Metrics) -> Self {
        let this = Self::default();
        metrics.register(
            "rebalancer_load_reports",
            "Node load reports received",
            this.reports.clone(),
        );
        metrics.register(
            "rebalancer_load_reports_dropped",
            "Node load reports dropped: their payload names another group or zone than their subject",
            this.dropped.clone(),
        );
        metrics.register(
            "rebalancer_recompute_seconds",
            "Time to recompute every load cell",
            this.recompute.clone(),
        );
        metrics.register(
            "rebalancer_recompute_last_seconds",
            "Duration of the latest full recompute",
            this.last_recompute.clone(),
        );
        metrics.register("rebalancer_nodes", "Nodes in the load table", this.nodes.clone());
        metrics.register("rebalancer_cells", "Load cells served", this.cells.clone());
        this
    }

    pub fn observe(&self, took: Duration, nodes: usize, cells: usize) {
        self.recompute.observe(took.as_secs_f64());
        self.last_recompute.set(took.as_secs_f64());
        self.nodes.set(nodes as i64);
        self.cells.set(cells as i64);
    }
}
