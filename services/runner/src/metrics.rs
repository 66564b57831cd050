//! The node's Prometheus metrics (`ramen_mcp_*`, `ramen_runtime_*`), labelled with the node's
//! group and zone.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use ramen_telemetry::Metrics;

use crate::HashMap;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    pub package: String,
    /// `ok`, `tool_error` (the tool answered `isError`), `error` (JSON-RPC error), `blocked`,
    /// `overloaded`, `cancelled`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    pub method: String,
}

/// Per-tool series: `tool` is only ever a name the node's catalog serves (calls naming
/// anything else are not counted by tool), so the label is bounded by what the group deploys.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    pub tool: String,
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolName {
    pub tool: String,
}

#[derive(Clone)]
pub struct NodeMetrics {
    pub requests: Family<RequestLabels, Counter>,
    pub duration: Family<MethodLabels, Histogram>,
    pub tool_calls: Family<ToolLabels, Counter>,
    pub tool_duration: Family<ToolName, Histogram>,
    pub in_flight: Gauge,
    /// The most calls the node lets run at once (more answer `overloaded`): what
    /// `in_flight` is measured against.
    pub in_flight_cap: Gauge,
    /// Threads serving MCP requests: the async runtime's workers (`threads` in the config).
    pub threads: Gauge,
    pub runtime_restarts: Counter,
    /// Re-lists after the runtime hinted that a list changed.
    pub runtime_relists: Counter,
    pub blocked_calls: Counter,
    pub sessions: Gauge,
    /// Call records dropped (the queue was full) or not taken by the stream.
    pub call_records_lost: Counter,
    /// The series one (method, package, tool, outcome) records into, found once: each
    /// family's `get_or_create` builds its labels' strings and hashes them, four times per
    /// call. The handles share their values with the families' series.
    series: Arc<RwLock<HashMap<Box<str>, Series>>>,
}

/// The most series [`NodeMetrics::series`] remembers (clients' made-up methods are counted
/// too); past it, series are found in their families per call, as before.
const SERIES_CACHE_CAP: usize = 10_000;

struct Series {
    requests: Counter,
    duration: Histogram,
    tool: Option<(Counter, Histogram)>,
}

impl Series {
    fn record(&self, seconds: f64) {
        self.requests.inc();
        self.duration.observe(seconds);
        if let Some((calls, duration)) = &self.tool {
            calls.inc();
            duration.observe(seconds);
        }
    }
}

impl NodeMetrics {
    /// Registers the node's series, each carrying the node's `group` and `zone`.
    pub fn register(metrics: &Metrics, group: &str, zone: &str) -> Self {
        let labels = [("group", group), ("zone", zone)];
        let this = Self {
            requests: Family::default(),
            // 50 µs .. ~6.5 s
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.00005, 2.0, 18))
            }),
            tool_calls: Family::default(),
            // 100 µs .. ~13 s
            tool_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 18))
            }),
            in_flight: Gauge::default(),
            in_flight_cap: Gauge::default(),
            threads: Gauge::default(),
            runtime_restarts: Counter::default(),
            runtime_relists: Counter::default(),
            blocked_calls: Counter::default(),
            call_records_lost: Counter::default(),
            sessions: Gauge::default(),
            series: Arc::default(),
        };
        metrics.register_labelled(
            &labels,
            "mcp_requests",
            "MCP requests by method, package and outcome",
            this.requests.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_request_duration_seconds",
            "MCP request duration",
            this.duration.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_tool_calls",
            "tools/call by tool (a name the catalog serves) and outcome",
            this.tool_calls.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_tool_call_duration_seconds",
            "tools/call duration by tool",
            this.tool_duration.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_in_flight",
            "Calls in flight to the Python runtime",
            this.in_flight.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_in_flight_cap",
            "The most calls in flight the node takes; past it calls answer overloaded",
            this.in_flight_cap.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_threads",
            "Threads serving MCP requests (the async runtime's workers; the config's threads)",
            this.threads.clone(),
        );
        metrics.register_labelled(
            &labels,
            "runtime_restarts",
            "Restarts of the Python runtime after it died",
            this.runtime_restarts.clone(),
        );
        metrics.register_labelled(
            &labels,
            "runtime_relists",
            "Re-lists of the packages after the runtime said a list changed (a tool, a restarted stdio program)",
            this.runtime_relists.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_blocked_calls",
            "Calls refused because the tool or package is blocked",
            this.blocked_calls.clone(),
        );
        metrics.register_labelled(
            &labels,
            "mcp_sessions",
            "Open MCP sessions",
            this.sessions.clone(),
        );
        metrics.register_labelled(
            &labels,
            "call_records_lost",
            "Call records dropped because the node's queue was full, or not taken by the calls stream",
            this.call_records_lost.clone(),
        );
        this
    }

    pub fn record(&self, method: &str, package: &str, outcome: &'static str, seconds: f64) {
        self.record_call(method, package, None, outcome, seconds);
    }

    /// [`Self::record`], and the per-tool series when the call named a catalogued tool.
    pub fn record_call(
        &self,
        method: &str,
        package: &str,
        tool: Option<&str>,
        outcome: &'static str,
        seconds: f64,
    ) {
        thread_local! {
            static KEY: RefCell<String> = const { RefCell::new(String::new()) };
        }
        let parts = [method, package, tool.unwrap_or_default(), outcome];
        if parts.iter().any(|part| part.contains('\0')) {
            // Not a name anything serves (a client's made-up method): no cached series, so
            // NUL can separate the parts of the key below.
            return self.create_series(method, package, tool, outcome).record(seconds);
        }
        KEY.with_borrow_mut(|key| {
            key.clear();
            for part in parts {
                key.push_str(part);
                key.push('\0');
            }
            key.push(if tool.is_some() { 't' } else { '-' });
            if let Some(series) = self.series.read().get(key.as_str()) {
                return series.record(seconds);
            }
            let series = self.create_series(method, package, tool, outcome);
            series.record(seconds);
            let mut cached = self.series.write();
            if cached.len() < SERIES_CACHE_CAP {
                cached.insert(key.as_str().into(), series);
            }
        });
    }

    fn create_series(
        &self,
        method: &str,
        package: &str,
        tool: Option<&str>,
        outcome: &'static str,
    ) -> Series {
        let labels =
            RequestLabels { method: method.to_owned(), package: package.to_owned(), outcome };
        let tool = tool.map(|tool| {
            let calls = ToolLabels { tool: tool.to_owned(), outcome };
            let name = ToolName { tool: tool.to_owned() };
            (
                self.tool_calls.get_or_create(&calls).clone(),
                self.tool_duration.get_or_create(&name).clone(),
            )
        });
        Series {
            requests: self.requests.get_or_create(&labels).clone(),
            duration: self
                .duration
                .get_or_create(&MethodLabels { method: method.to_owned() })
                .clone(),
            tool,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached handles count into the families' series (what `/metrics` shows), a call
    /// without a tool does not share a tool call's series, and a made-up method with a NUL
    /// in it is counted all the same.
    #[test]
    fn cached_series_count_into_the_families() {
        let metrics = NodeMetrics::register(&Metrics::default(), "g", "z");
        for _ in 0..2 {
            metrics.record_call("tools/call", "pkg", Some("pkg.add"), "ok", 0.001);
        }
        metrics.record_call("tools/call", "pkg", None, "ok", 0.001);
        metrics.record("ping", "", "ok", 0.0);
        metrics.record("bad\0method", "", "error", 0.0);
        metrics.record("bad\0method", "", "error", 0.0);
        let requests = |method: &str, package: &str, outcome| {
            let labels = RequestLabels { method: method.into(), package: package.into(), outcome };
            metrics.requests.get_or_create(&labels).get()
        };
        assert_eq!(requests("tools/call", "pkg", "ok"), 3);
        assert_eq!(requests("ping", "", "ok"), 1);
        assert_eq!(requests("bad\0method", "", "error"), 2);
        let tool = ToolLabels { tool: "pkg.add".into(), outcome: "ok" };
        assert_eq!(metrics.tool_calls.get_or_create(&tool).get(), 2);
    }
}
