//! Transitions of the job record. Writes made while running a job are fenced: they apply only
//! while the record still names this deployer and its claim number, so a deployer that lost its
//! lease (and did not notice yet) cannot write over the one that resumed the job.

use ramen_proto::events::v1::{DeployFinished, ZoneOutcome};

use super::model::{JobRecord, JobState};
use crate::Jobs;
use crate::conversions;
use crate::error::{Error, Result};
use crate::model::{LastDeploy, Status, environment_id, now_ms};

/// What a delivery turned out to be.
pub(crate) enum Claim {
    /// This deployer now runs the job under this claim number.
    Run(u64),
    /// Nothing to run: the job is terminal, or the delivery is a stale duplicate.
    Drop(&'static str),
    /// Cancelled while queued or interrupted: now terminal.
    Cancelled,
}

impl Jobs {
    /// Claims the job for this deployer (the caller holds its lease).
    pub(crate) async fn claim_job(
        &self,
        job_id: &str,
        sequence: u64,
        delivered: i64,
    ) -> Result<Claim> {
        let instance = self.instance.clone();
        let outcome = self
            .core
            .db
            .jobs
            .modify(job_id, |job| {
                if job.state.is_terminal() {
                    return Ok(None);
                }
                if job.work_seq != 0 && job.work_seq != sequence {
                    return Ok(Some(false));
                }
                job.work_seq = sequence;
                // A cancelled job whose canary ran is run once more: its zones cancel at the
                // next step boundary and scale the canary back to zero.
                if job.cancel_requested && !canary_touched(job) {
                    close(job, JobState::Cancelled, cancel_message(job));
                    return Ok(Some(true));
                }
                job.state = JobState::Running;
                job.holder = instance.clone();
                job.claim += 1;
                job.attempt = delivered.max(1) as u32;
                job.error.clear();
                if job.started_at_ms == 0 {
                    job.started_at_ms = now_ms();
                }
                job.updated_at_ms = now_ms();
                Ok::<_, Error>(Some(true))
            })
            .await;
        match outcome {
            Err(Error::Store(ramen_store::StoreError::NotFound { .. })) => {
                Ok(Claim::Drop("no such job (deleted)"))
            }
            Err(err) => Err(err),
            Ok((_, None)) => Ok(Claim::Drop("job already finished")),
            Ok((_, Some(false))) => Ok(Claim::Drop("stale work item (the job has a newer one)")),
            Ok((written, Some(true))) if written.value.state == JobState::Cancelled => {
                self.announce_finished(&written.value).await;
                Ok(Claim::Cancelled)
            }
            Ok((written, Some(true))) => Ok(Claim::Run(written.value.claim)),
        }
    }

    /// Why a delivery has nothing to run, if so (read without a lease; `claim_job` checks
    /// again under the write).
    pub(crate) async fn nothing_to_run(
        &self,
        job_id: &str,
        sequence: u64,
    ) -> Result<Option<&'static str>> {
        let Some(job) = self.core.db.jobs.get(job_id).await? else {
            return Ok(Some("no such job (deleted)"));
        };
        let job = job.value;
        Ok(if job.state.is_terminal() {
            Some("job already finished")
        } else if job.work_seq != 0 && job.work_seq != sequence {
            Some("stale work item (the job has a newer one)")
        } else {
            None
        })
    }

    /// Applies `change` only while this deployer holds `claim` on the job.
    pub(crate) async fn fenced<R: Send>(
        &self,
        job_id: &str,
        claim: u64,
        mut change: impl FnMut(&mut JobRecord) -> R + Send,
    ) -> Result<(JobRecord, R)> {
        let instance = &self.instance;
        let (written, out) = self
            .core
            .db
            .jobs
            .modify(job_id, |job| {
                if job.holder != *instance || job.claim != claim || job.state != JobState::Running {
                    return Err(Error::LeaseLost(job_id.to_owned()));
                }
                job.updated_at_ms = now_ms();
                Ok(change(job))
            })
            .await?;
        Ok((written.value, out))
    }

    /// Ends the job in a terminal state (fenced), records it on the environment, publishes.
    pub(crate) async fn finish_job(
        &self,
        job_id: &str,
        claim: u64,
        state: JobState,
        error: String,
    ) -> Result<JobRecord> {
        let (job, ()) = self.fenced(job_id, claim, |job| close(job, state, error.clone())).await?;
        self.announce_finished(&job).await;
        Ok(job)
    }

    /// Hands the job back after an interruption or a retryable failure: FAILED_RESUMABLE, or
    /// CANCELLED when an operator asked (a cancel always wins). Running steps go back to
    /// pending with a note, so the resume restarts them.
    pub(crate) async fn suspend_job(
        &self,
        job_id: &str,
        claim: u64,
        why: &str,
    ) -> Result<JobRecord> {
        let (job, ()) = self
            .fenced(job_id, claim, |job| {
                if job.cancel_requested {
                    close(job, JobState::Cancelled, cancel_message(job));
                    return;
                }
                interrupt_steps(job, why);
                job.state = JobState::FailedResumable;
                job.error = why.to_owned();
                job.holder.clear();
            })
            .await?;
        if job.state.is_terminal() {
            self.announce_finished(&job).await;
        }
        Ok(job)
    }

    /// The environment row's last deploy and `DeployFinished`, after a terminal write.
    /// Every terminal write comes here (the worker, cancel, the sweeper, the DLQ), so this is
    /// also where the finished-jobs series count.
    pub(crate) async fn announce_finished(&self, job: &JobRecord) {
        self.metrics.finished(job, crate::model::now_ms());
        let last = LastDeploy {
            job_id: job.id.clone(),
            outcome: job.state,
            git_ref: job.git_ref.clone(),
            commit: job.commit.clone(),
            finished_at_ms: job.finished_at_ms,
            error: job.error.clone(),
        };
        let id = environment_id(&job.group, &job.environment);
        let updated = self
            .core
            .db
            .environments
            .modify(&id, |e| {
                let newer =
                    e.last_deploy.as_ref().is_some_and(|d| d.finished_at_ms > last.finished_at_ms);
                if !newer {
                    e.last_deploy = Some(last.clone());
                }
                Ok::<_, Error>(())
            })
            .await;
        if let Err(err) = updated {
            tracing::warn!(job = %job.id, error = %err, "last deploy not recorded on the environment");
        }
        let event = DeployFinished {
            meta: Some(crate::ports::events::meta(&crate::caller::deployer())),
            job_id: job.id.clone(),
            group: job.group.clone(),
            environment: job.environment.clone(),
            git_ref: job.git_ref.clone(),
            commit: job.commit.clone(),
            state: conversions::job_state(job.state) as i32,
            error: job.error.clone(),
            zones: job
                .zones
                .iter()
                .map(|z| ZoneOutcome {
                    zone: z.zone.clone(),
                    status: conversions::status(z.status) as i32,
                    error: z
                        .steps
                        .iter()
                        .find(|s| !s.error.is_empty())
                        .map(|s| s.error.clone())
                        .unwrap_or_default(),
                })
                .collect(),
        };
        self.core.events.publish(&event).await;
    }
}

/// Makes the record terminal: no holder, no longer the environment's live deploy.
pub(crate) fn close(job: &mut JobRecord, state: JobState, error: String) {
    let now = now_ms();
    if state == JobState::Cancelled {
        for zone in job.zones.iter_mut().filter(|z| !z.status.is_done()) {
            zone.status = Status::Cancelled;
            for step in zone.steps.iter_mut().filter(|s| !s.status.is_done()) {
                step.status = Status::Cancelled;
                if step.started_at_ms > 0 && step.ended_at_ms == 0 {
                    step.ended_at_ms = now;
                }
            }
        }
    }
    job.state = state;
    job.error = error;
    job.active = None;
    job.holder.clear();
    job.finished_at_ms = now;
    job.updated_at_ms = now;
}

/// Some zone's canary was restarted and not scaled back to zero yet.
pub(crate) fn canary_touched(job: &JobRecord) -> bool {
    use super::model::Step;
    job.zones.iter().any(|z| {
        let ran = z.step(Step::Canary).is_some_and(|s| s.started_at_ms > 0);
        let rolled_back =
            z.step(Step::CanaryRollback).is_some_and(|s| s.status == Status::Succeeded);
        let done = z.status.is_done();
        ran && !rolled_back && !done
    })
}

pub(crate) fn cancel_message(job: &JobRecord) -> String {
    if job.cancel_reason.is_empty() {
        "cancelled by an operator".to_owned()
    } else {
        format!("cancelled by an operator: {}", job.cancel_reason)
    }
}

/// Steps left running by an interruption go back to pending, with the reason in their log.
fn interrupt_steps(job: &mut JobRecord, why: &str) {
    let now = now_ms();
    for zone in &mut job.zones {
        for step in zone.steps.iter_mut().filter(|s| s.status == Status::Running) {
            step.status = Status::Pending;
            step.log.push(super::model::LogLine {
                at_ms: now,
                text: format!("interrupted: {why}; resumes here"),
            });
        }
        if zone.status == Status::Running {
            zone.status = Status::Pending;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::{Step, ZoneRun};

    fn job() -> JobRecord {
        let mut job = JobRecord {
            id: "j1".into(),
            state: JobState::Running,
            active: Some("team.prod".into()),
            holder: "deployer-a".into(),
            zones: vec![ZoneRun::new("a"), ZoneRun::new("b")],
            ..JobRecord::default()
        };
        job.zones[0].status = Status::Succeeded;
        for step in &mut job.zones[0].steps {
            step.status = Status::Succeeded;
        }
        job.zones[1].status = Status::Running;
        job.zones[1].step_mut(Step::Sync).status = Status::Succeeded;
        let canary = job.zones[1].step_mut(Step::Canary);
        canary.status = Status::Running;
        canary.started_at_ms = 5;
        job
    }

    #[test]
    fn a_cancel_closes_what_is_not_done_and_frees_the_environment() {
        let mut job = job();
        close(&mut job, JobState::Cancelled, "cancelled".into());
        assert_eq!(
            (job.state, job.active.as_deref(), job.holder.as_str()),
            (JobState::Cancelled, None, "")
        );
        assert_eq!(job.zones[0].status, Status::Succeeded, "a finished zone stays finished");
        assert_eq!(job.zones[1].status, Status::Cancelled);
        let b = &job.zones[1];
        assert_eq!(b.step(Step::Sync).unwrap().status, Status::Succeeded);
        assert_eq!(b.step(Step::Canary).unwrap().status, Status::Cancelled);
        assert!(b.step(Step::Canary).unwrap().ended_at_ms > 0);
        assert_eq!(b.step(Step::Stable).unwrap().status, Status::Cancelled);
    }

    #[test]
    fn an_interruption_puts_running_steps_back_with_a_note() {
        let mut job = job();
        interrupt_steps(&mut job, "drain");
        let canary = job.zones[1].step(Step::Canary).unwrap();
        assert_eq!(canary.status, Status::Pending);
        assert!(canary.log.last().unwrap().text.contains("drain; resumes here"));
        assert_eq!(job.zones[1].status, Status::Pending);
        assert_eq!(job.zones[0].status, Status::Succeeded);
    }

    #[test]
    fn a_canary_counts_as_touched_until_it_is_rolled_back_or_its_zone_is_done() {
        let mut rolled_back = job();
        assert!(canary_touched(&rolled_back), "zone b's canary started and was not scaled back");
        rolled_back.zones[1].step_mut(Step::CanaryRollback).status = Status::Succeeded;
        assert!(!canary_touched(&rolled_back), "rolled back");
        let mut finished = job();
        finished.zones[1].status = Status::Failed;
        assert!(!canary_touched(&finished), "a finished zone handled its canary");
        let mut fresh = job();
        fresh.zones[1].step_mut(Step::Canary).started_at_ms = 0;
        assert!(!canary_touched(&fresh), "no canary ran");
    }

    #[test]
    fn the_cancel_message_carries_the_reason() {
        let mut job = job();
        assert_eq!(cancel_message(&job), "cancelled by an operator");
        job.cancel_reason = "wrong ref".into();
        assert_eq!(cancel_message(&job), "cancelled by an operator: wrong ref");
    }
}
