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
}

impl JobState {
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
    Stable,
    CanaryRollback,
}

impl Step {
    pub const PIPELINE: [Step; 5] =
        [Step::Sync, Step::WriteConfig, Step::Canary, Step::ReloadSmoke, Step::Stable];

    pub fn name(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::WriteConfig => "write_config",
            Self::Canary => "canary",
            Self::ReloadSmoke => "reload_smoke",
            Self::Stable => "stable",
            Self::CanaryRollback => "canary_rollback",
        }
    }

    /// A failure here scales the canary back to zero.
    pub fn touches_canary(self) -> bool {
        matches!(self, Self::Canary | Self::ReloadSmoke | Self::Stable)
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
}

impl ZoneRun {
    pub fn new(zone: &str) -> Self {
        Self {
            zone: zone.to_owned(),
            status: Status::Pending,
            steps: Step::PIPELINE.iter().map(|s| StepRecord::pending(*s)).collect(),
            packages: Vec::new(),
        }
    }

    pub fn step(&self, step: Step) -> Option<&StepRecord> {
        self.steps.iter().find(|s| s.step == step)
    }

    /// The record of `step`, appended when missing (the rollback step).
    pub fn step_mut(&mut self, step: Step) -> &mut StepRecord {
        if let Some(i) = self.steps.iter().position(|s| s.step == step) {
            return &mut self.steps[i];
        }
        self.steps.push(StepRecord::pending(step));
        self.steps.last_mut().expect("just pushed")
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
