//! The deployer's Prometheus series (on the process's `/metrics`, `ramen_` prefix).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::jobs::model::{JobRecord, JobState, Step};
use crate::model::Status;

type Labels = Vec<(String, String)>;

#[derive(Clone)]
pub struct DeployMetrics {
    /// Deploy requests by what became of them: `created`, `replayed` (an idempotency key that
    /// named an existing job) or `refused` (invalid, not allowed, another deploy live).
    pub created: Family<Labels, Counter>,
    /// Jobs this process runs now (summed over the fleet: jobs in flight).
    pub active: Gauge,
    /// Jobs that reached a terminal state here (run to the end, cancelled, swept, dead-lettered),
    /// by state.
    pub finished: Family<Labels, Counter>,
    /// Request to terminal state, by state.
    pub duration: Family<Labels, Histogram>,
    /// One zone's run of one pipeline step, start to end, by step and how it ended (the
    /// dashboard's step durations; the "stuck past its budget" alert reads the job itself).
    pub step_duration: Family<Labels, Histogram>,
    /// Jobs handed back (drain, retryable failure), by reason.
    pub handed_back: Family<Labels, Counter>,
    /// Lease refreshes or `InProgress` heartbeats that failed.
    pub heartbeat_errors: Counter,
    /// The work consumer's backlog, polled from the server: not yet delivered, and delivered
    /// but not acknowledged.
    pub queue_pending: Gauge,
    pub queue_ack_pending: Gauge,
}

impl Default for DeployMetrics {
    fn default() -> Self {
        Self {
            created: Family::default(),
            active: Gauge::default(),
            finished: Family::default(),
            // 1 s .. ~2.3 h
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1.0, 2.0, 14))
            }),
            // 0.25 s .. ~34 min
            step_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.25, 2.0, 14))
            }),
            handed_back: Family::default(),
            heartbeat_errors: Counter::default(),
            queue_pending: Gauge::default(),
            queue_ack_pending: Gauge::default(),
        }
    }
}

impl DeployMetrics {
    /// Registers every series, with each known label value at zero so dashboards and alerts
    /// see a flat line rather than no data before the first event.
    pub fn register(&self, metrics: &ramen_telemetry::Metrics) {
        for outcome in ["created", "replayed", "refused"] {
            drop(self.created.get_or_create(&label("outcome", outcome)));
        }
        for state in
            [JobState::Succeeded, JobState::Failed, JobState::Cancelled, JobState::DeadLettered]
        {
            let labels = label("state", state.as_str());
            drop(self.finished.get_or_create(&labels));
            drop(self.duration.get_or_create(&labels));
        }
        for step in Step::PIPELINE {
            drop(self.step_duration.get_or_create(&step_labels(step, Status::Succeeded)));
        }
        for reason in ["drain", "retryable_failure"] {
            drop(self.handed_back.get_or_create(&label("reason", reason)));
        }
        metrics.register(
            "deploy_jobs_created",
            "Deploy requests by outcome: created, replayed (idempotency key), refused",
            self.created.clone(),
        );
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
            "deploy_job_duration_seconds",
            "Deploy jobs from request to finish, by state",
            self.duration.clone(),
        );
        metrics.register(
            "deploy_step_duration_seconds",
            "One zone's run of a pipeline step, by step and status (succeeded, failed, cancelled)",
            self.step_duration.clone(),
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
        metrics.register(
            "deploy_queue_pending",
            "Deploy work items not yet delivered (JetStream consumer num_pending)",
            self.queue_pending.clone(),
        );
        metrics.register(
            "deploy_queue_ack_pending",
            "Deploy work items delivered and not yet acknowledged (num_ack_pending)",
            self.queue_ack_pending.clone(),
        );
    }

    pub fn created(&self, outcome: &str) {
        self.created.get_or_create(&label("outcome", outcome)).inc();
    }

    pub fn finished(&self, job: &JobRecord, now_ms: i64) {
        let labels = label("state", job.state.as_str());
        self.finished.get_or_create(&labels).inc();
        let seconds = (now_ms - job.created_at_ms).max(0) as f64 / 1000.0;
        self.duration.get_or_create(&labels).observe(seconds);
    }

    /// A step that ran and ended (skipped steps did not run and are not observed).
    pub fn step_ended(&self, step: Step, status: Status, started_at_ms: i64, ended_at_ms: i64) {
        if started_at_ms <= 0 || ended_at_ms < started_at_ms || status == Status::Skipped {
            return;
        }
        let seconds = (ended_at_ms - started_at_ms) as f64 / 1000.0;
        self.step_duration.get_or_create(&step_labels(step, status)).observe(seconds);
    }

    pub fn handed_back(&self, reason: &str) {
        self.handed_back.get_or_create(&label("reason", reason)).inc();
    }
}

fn step_labels(step: Step, status: Status) -> Labels {
    let status = serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    vec![("step".to_owned(), step.name().to_owned()), ("status".to_owned(), status)]
}

fn label(name: &str, value: &str) -> Labels {
    vec![(name.to_owned(), value.to_owned())]
}
