//! The node's Prometheus metrics (`ramen_mcp_*`, `ramen_runtime_*`), labelled with the node's
//! group and zone.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use ramen_telemetry::Metrics;

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
    pub runtime_restarts: Counter,
    /// Re-lists after the runtime hinted that a list changed.
    pub runtime_relists: Counter,
    pub blocked_calls: Counter,
    pub sessions: Gauge,
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
            // 100 µs .. ~26 s
            tool_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 18))
            }),
            in_flight: Gauge::default(),
            in_flight_cap: Gauge::default(),
            runtime_restarts: Counter::default(),
            runtime_relists: Counter::default(),
            blocked_calls: Counter::default(),
            sessions: Gauge::default(),
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
        this
    }

    pub fn record(&self, method: &str, package: &str, outcome: &'static str, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                package: package.to_owned(),
                outcome,
            })
            .inc();
        self.duration.get_or_create(&MethodLabels { method: method.to_owned() }).observe(seconds);
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
        self.record(method, package, outcome, seconds);
        if let Some(tool) = tool {
            self.tool_calls.get_or_create(&ToolLabels { tool: tool.to_owned(), outcome }).inc();
            self.tool_duration.get_or_create(&ToolName { tool: tool.to_owned() }).observe(seconds);
        }
    }
}
