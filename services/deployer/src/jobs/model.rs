//! The deploy job record (`deployer_deploy_jobs`): the job's state, its per-zone per-step
//! progress and log, and the fencing fields that keep a deployer that lost its lease from
//! writing over the one that took the job.

use ramen_proto::common::v1::PackageReport;
use serde::{Deserialize, Serialize};

use crate::model::Status;

/// See `docs/architecture.md` ("Deployer: job states").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    #[default]
    Queued,
    Running,
    Succeeded,
    Failed,
    FailedResumable,
    Cancelled,
    DeadLettered,
    /// Parked in the REVIEW step: canary up, stable untouched, no holder, no work item. A
    /// decision (or the review's expiry) queues it again.
    Review,
}

impl JobState {
    /// The state as it is stored and as the API and the metrics name it (its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::FailedResumable => "failed_resumable",
            Self::Cancelled => "cancelled",
            Self::DeadLettered => "dead_lettered",
            Self::Review => "review",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled | Self::DeadLettered)
    }
}

/// The per-zone steps in pipeline order; `CanaryRollback` only runs after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Sync,
    WriteConfig,
    Canary,
    ReloadSmoke,
    Review,
    Stable,
    CanaryRollback,
}

impl Step {
    pub const PIPELINE: [Step; 6] = [
        Step::Sync,
        Step::WriteConfig,
        Step::Canary,
        Step::ReloadSmoke,
        Step::Review,
        Step::Stable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::WriteConfig => "write_config",
            Self::Canary => "canary",
            Self::ReloadSmoke => "reload_smoke",
            Self::Review => "review",
            Self::Stable => "stable",
            Self::CanaryRollback => "canary_rollback",
        }
    }

    /// A failure here scales the canary back to zero.
    pub fn touches_canary(self) -> bool {
        matches!(self, Self::Canary | Self::ReloadSmoke | Self::Review | Self::Stable)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    pub at_ms: i64,
    pub text: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stuck {
    pub worker: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub step: Step,
    pub status: Status,
    #[serde(default)]
    pub started_at_ms: i64,
    #[serde(default)]
    pub ended_at_ms: i64,
    #[serde(default)]
    pub outcome: String,
    #[serde(default)]
    pub log: Vec<LogLine>,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub stuck: Vec<Stuck>,
    /// Times this step was started (a resumed step starts again).
    #[serde(default)]
    pub runs: u32,
}

impl StepRecord {
    pub fn pending(step: Step) -> Self {
        Self {
            step,
            status: Status::Pending,
            started_at_ms: 0,
            ended_at_ms: 0,
            outcome: String::new(),
            log: Vec::new(),
            error: String::new(),
            stuck: Vec::new(),
            runs: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneRun {
    pub zone: String,
    pub status: Status,
    pub steps: Vec<StepRecord>,
    /// What the canary reported at RELOAD_SMOKE, stored with the zone once stable is up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<PackageReport>,
    /// How the canary's surface differs from stable's (RELOAD_SMOKE compared them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surface_changes: Vec<SurfaceChangeRecord>,
    /// Items the canary lists, once compared.
    #[serde(default)]
    pub surface_items: u32,
}

/// One item that differs between stable and the canary. Values are kept as JSON text: a
/// schema's keys (`$schema`, dotted names) are not always legal field names in a store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SurfaceChangeRecord {
    /// `tool`, `resource`, `resource template`, `prompt`.
    pub kind: String,
    pub name: String,
    /// `added`, `removed`, `changed`.
    pub change: String,
    /// Added or removed: the whole item.
    pub item_json: String,
    pub fields: Vec<FieldChangeRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldChangeRecord {
    pub path: String,
    /// Empty: absent on that side.
    pub before_json: String,
    pub after_json: String,
}

impl SurfaceChangeRecord {
    pub fn from_change(change: &ramen_surface::Change) -> Self {
        use ramen_surface::Change;
        let text =
            |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
        match change {
            Change::Added { kind, name, item } | Change::Removed { kind, name, item } => Self {
                kind: kind.word().to_owned(),
                name: name.clone(),
                change: if matches!(change, Change::Added { .. }) { "added" } else { "removed" }
                    .to_owned(),
                item_json: item.to_string(),
                fields: Vec::new(),
            },
            Change::Changed { kind, name, fields } => Self {
                kind: kind.word().to_owned(),
                name: name.clone(),
                change: "changed".to_owned(),
                item_json: String::new(),
                fields: fields
                    .iter()
                    .map(|f| FieldChangeRecord {
                        path: f.path.clone(),
                        before_json: text(&f.before),
                        after_json: text(&f.after),
                    })
                    .collect(),
            },
        }
    }
}

/// Where a review stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    #[default]
    Pending,
    Approved,
    Rejected,
    /// Nobody decided in time: a rejection.
    Expired,
}

/// The review of a job's surface change: one per job, whichever zones changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReviewRecord {
    pub decision: ReviewDecision,
    pub requested_at_ms: i64,
    pub expires_at_ms: i64,
    pub decided_by: String,
    pub decided_at_ms: i64,
    pub reason: String,
}

impl ZoneRun {
    pub fn new(zone: &str) -> Self {
        Self {
            zone: zone.to_owned(),
            status: Status::Pending,
            steps: Step::PIPELINE.iter().map(|s| StepRecord::pending(*s)).collect(),
            packages: Vec::new(),
            surface_changes: Vec::new(),
            surface_items: 0,
        }
    }

    pub fn step(&self, step: Step) -> Option<&StepRecord> {
        self.steps.iter().find(|s| s.step == step)
    }

    /// The record of `step`, added when missing: the rollback step at the end, a pipeline step
    /// (REVIEW, in a job stored before it existed) in pipeline order.
    pub fn step_mut(&mut self, step: Step) -> &mut StepRecord {
        if let Some(i) = self.steps.iter().position(|s| s.step == step) {
            return &mut self.steps[i];
        }
        let order = |s: Step| Step::PIPELINE.iter().position(|p| *p == s).unwrap_or(usize::MAX);
        let at =
            self.steps.iter().position(|s| order(s.step) > order(step)).unwrap_or(self.steps.len());
        self.steps.insert(at, StepRecord::pending(step));
        &mut self.steps[at]
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobRecord {
    pub id: String,
    pub group: String,
    pub environment: String,
    pub git_ref: String,
    pub commit: String,
    pub state: JobState,
    pub requested_by: String,
    pub request_id: String,
    /// `<group>.<environment>.<key>` when the caller gave an idempotency key (unique index).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// `<group>.<environment>` while the job is not terminal: a unique index on it refuses a
    /// second live deploy of one environment atomically.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    pub created_at_ms: i64,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub updated_at_ms: i64,
    /// JetStream delivery count of the current attempt.
    pub attempt: u32,
    pub error: String,
    pub cancel_requested: bool,
    pub cancel_reason: String,
    pub zones: Vec<ZoneRun>,
    /// Deployer instance holding the job's lease; empty when none.
    pub holder: String,
    /// Bumped by every claim; writes by an older claim are refused (fencing).
    pub claim: u64,
    /// Stream sequence of the job's current work item; 0 = not known yet (any is accepted).
    pub work_seq: u64,
    /// Set once a zone's surface change asked for review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
}

impl JobRecord {
    pub fn zone(&self, zone: &str) -> Option<&ZoneRun> {
        self.zones.iter().find(|z| z.zone == zone)
    }

    pub fn zone_mut(&mut self, zone: &str) -> Option<&mut ZoneRun> {
        self.zones.iter_mut().find(|z| z.zone == zone)
    }
}

/// At most this many log lines are kept per step (the newest are dropped past it, with a
/// note), so a chatty pip cannot grow a job past the store's document limit.
pub const MAX_LOG_LINES: usize = 400;

#[cfg(test)]
mod tests {
    use super::JobState;

    #[test]
    fn a_state_names_itself_as_it_is_stored() {
        use JobState::*;
        for state in
            [Queued, Running, Succeeded, Failed, FailedResumable, Cancelled, DeadLettered, Review]
        {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str(), "{state:?}");
        }
    }
}
