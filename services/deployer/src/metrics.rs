//! The deployer's Prometheus series (on the process's `/metrics`, `ramen_` prefix).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::jobs::model::JobState;

#[derive(Clone, Default)]
pub struct DeployMetrics {
    /// Jobs this process runs now (summed over the fleet: jobs in flight).
    pub active: Gauge,
    /// Jobs that reached a terminal state here, by state.
    pub finished: Family<Vec<(String, String)>, Counter>,
    /// Jobs handed back (drain, retryable failure), by reason.
    pub handed_back: Family<Vec<(String, String)>, Counter>,
    /// Lease refreshes or `InProgress` heartbeats that failed.
    pub heartbeat_errors: Counter,
}

impl DeployMetrics {
    pub fn register(&self, metrics: &ramen_telemetry::Metrics) {
        metrics.register(
            "deploy_jobs_active",
            "Deploy jobs this deployer runs now",
            self.active.clone(),
        );
        metrics.register(
            "deploy_jobs_finished",
            "Deploy jobs finished, by state",
            self.finished.clone(),
        );
        metrics.register(
            "deploy_jobs_handed_back",
            "Deploy jobs checkpointed and handed back, by reason",
            self.handed_back.clone(),
        );
        metrics.register(
            "deployer_heartbeat_errors",
            "Job lease or InProgress heartbeats that failed",
            self.heartbeat_errors.clone(),
        );
    }

    pub fn finished(&self, state: JobState) {
        let state = serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        self.finished.get_or_create(&vec![("state".to_owned(), state)]).inc();
    }

    pub fn handed_back(&self, reason: &str) {
        self.handed_back.get_or_create(&vec![("reason".to_owned(), reason.to_owned())]).inc();
    }
}
