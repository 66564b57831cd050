//! What a running job writes: each step's start, log lines, end (with outcome, error and the
//! stuck workers), zone status, resolved commit and package reports. Every write is fenced
//! (see `claim.rs`) and followed by its event (`DeployStepChanged`, `DeployLog`).

use std::sync::Arc;

use ramen_proto::common::v1::PackageReport;
use ramen_proto::events::v1::{self as ev, DeployLog, DeployStepChanged};

use super::model::{
    JobRecord, LogLine, MAX_LOG_LINES, ReviewRecord, Step, Stuck, SurfaceChangeRecord,
};
use crate::Jobs;
use crate::conversions;
use crate::error::{Error, Result};
use crate::model::{Status, now_ms};

/// How a step ended.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepEnd {
    pub outcome: String,
    pub error: String,
    pub stuck: Vec<Stuck>,
}

/// One claimed run of a job.
#[derive(Clone)]
pub(crate) struct JobRun {
    pub deployer: Arc<Jobs>,
    pub job_id: String,
    pub claim: u64,
}

impl JobRun {
    pub async fn current(&self) -> Result<JobRecord> {
        let found = self.deployer.core.db.jobs.get(&self.job_id).await?;
        found.map(|j| j.value).ok_or_else(|| Error::LeaseLost(self.job_id.clone()))
    }

    pub async fn set_commit(&self, commit: &str) -> Result<()> {
        self.deployer
            .fenced(&self.job_id, self.claim, |job| job.commit = commit.to_owned())
            .await?;
        Ok(())
    }

    pub async fn started(&self, zone: &str, step: Step) -> Result<()> {
        let (job, ()) = self
            .deployer
            .fenced(&self.job_id, self.claim, |job| {
                let Some(run) = job.zone_mut(zone) else { return };
                run.status = Status::Running;
                let record = run.step_mut(step);
                record.status = Status::Running;
                record.started_at_ms = now_ms();
                record.ended_at_ms = 0;
                record.error.clear();
                record.outcome.clear();
                record.stuck.clear();
                record.runs += 1;
            })
            .await?;
        self.step_event(&job, zone, step).await;
        Ok(())
    }

    pub async fn ended(&self, zone: &str, step: Step, status: Status, end: StepEnd) -> Result<()> {
        let (job, ()) = self
            .deployer
            .fenced(&self.job_id, self.claim, |job| {
                let Some(run) = job.zone_mut(zone) else { return };
                let record = run.step_mut(step);
                record.status = status;
                if record.started_at_ms == 0
                    && status != Status::Skipped
                    && status != Status::Cancelled
                {
                    record.started_at_ms = now_ms();
                }
                if record.started_at_ms > 0 {
                    record.ended_at_ms = now_ms();
                }
                record.outcome = end.outcome.clone();
                record.error = end.error.clone();
                record.stuck = end.stuck.clone();
            })
            .await?;
        if let Some(record) = job.zone(zone).and_then(|run| run.step(step)) {
            let metrics = &self.deployer.metrics;
            metrics.step_ended(step, status, record.started_at_ms, record.ended_at_ms);
        }
        self.step_event(&job, zone, step).await;
        Ok(())
    }

    pub async fn log(&self, zone: &str, step: Step, text: impl Into<String>) -> Result<()> {
        self.log_lines(zone, step, vec![text.into()]).await
    }

    pub async fn log_lines(&self, zone: &str, step: Step, texts: Vec<String>) -> Result<()> {
        if texts.is_empty() {
            return Ok(());
        }
        let at_ms = now_ms();
        let lines: Vec<LogLine> = texts.into_iter().map(|text| LogLine { at_ms, text }).collect();
        self.deployer
            .fenced(&self.job_id, self.claim, |job| {
                let Some(run) = job.zone_mut(zone) else { return };
                let log = &mut run.step_mut(step).log;
                for line in &lines {
                    if log.len() + 1 < MAX_LOG_LINES {
                        log.push(line.clone());
                    } else if log.len() + 1 == MAX_LOG_LINES {
                        log.push(LogLine {
                            at_ms,
                            text: format!("(log truncated at {MAX_LOG_LINES} lines)"),
                        });
                    }
                }
            })
            .await?;
        let event = DeployLog {
            meta: Some(crate::ports::events::meta(&crate::caller::deployer())),
            job_id: self.job_id.clone(),
            zone: zone.to_owned(),
            step: conversions::step(step) as i32,
            lines: lines
                .iter()
                .map(|l| ev::LogLine { at_unix_ms: l.at_ms, text: l.text.clone() })
                .collect(),
        };
        self.deployer.core.events.publish(&event).await;
        Ok(())
    }

    pub async fn zone_ended(&self, zone: &str, status: Status) -> Result<()> {
        self.deployer
            .fenced(&self.job_id, self.claim, |job| {
                if let Some(run) = job.zone_mut(zone) {
                    run.status = status;
                }
            })
            .await?;
        Ok(())
    }

    pub async fn set_packages(&self, zone: &str, packages: Vec<PackageReport>) -> Result<()> {
        self.deployer
            .fenced(&self.job_id, self.claim, |job| {
                if let Some(run) = job.zone_mut(zone) {
                    run.packages = packages.clone();
                }
            })
            .await?;
        Ok(())
    }

    /// The zone's surface comparison: the changes and how many items the canary lists.
    pub async fn set_surface(
        &self,
        zone: &str,
        changes: Vec<SurfaceChangeRecord>,
        items: usize,
    ) -> Result<()> {
        self.deployer
            .fenced(&self.job_id, self.claim, |job| {
                if let Some(run) = job.zone_mut(zone) {
                    run.surface_changes = changes.clone();
                    run.surface_items = u32::try_from(items).unwrap_or(u32::MAX);
                }
            })
            .await?;
        Ok(())
    }

    /// Opens the job's review (the first zone that needs one does; the others find it).
    pub async fn open_review(&self, timeout: std::time::Duration) -> Result<ReviewRecord> {
        let now = now_ms();
        let (job, ()) = self
            .deployer
            .fenced(&self.job_id, self.claim, |job| {
                job.review.get_or_insert_with(|| ReviewRecord {
                    requested_at_ms: now,
                    expires_at_ms: now.saturating_add(timeout.as_millis() as i64),
                    ..ReviewRecord::default()
                });
            })
            .await?;
        job.review.ok_or_else(|| Error::Internal("review not recorded".into()))
    }

    async fn step_event(&self, job: &JobRecord, zone: &str, step: Step) {
        let Some(record) = job.zone(zone).and_then(|z| z.step(step)) else { return };
        let event = DeployStepChanged {
            meta: Some(crate::ports::events::meta(&crate::caller::deployer())),
            job_id: job.id.clone(),
            group: job.group.clone(),
            environment: job.environment.clone(),
            zone: zone.to_owned(),
            step: conversions::step(step) as i32,
            status: conversions::status(record.status) as i32,
            started_at_unix_ms: record.started_at_ms,
            ended_at_unix_ms: record.ended_at_ms,
            outcome: record.outcome.clone(),
            error: record.error.clone(),
            stuck: record
                .stuck
                .iter()
                .map(|s| ev::StuckWorker { worker: s.worker.clone(), reason: s.reason.clone() })
                .collect(),
        };
        self.deployer.core.events.publish(&event).await;
    }
}
