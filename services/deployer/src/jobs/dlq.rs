//! Dead-lettered jobs (super admins): list, inspect, replay (same job id, fresh delivery
//! budget: it resumes at its interrupted step) and discard (DEAD_LETTERED for good).

use ramen_bus::{Dlq, ParkedMessage};
use ramen_proto::auth::v1::Action;
use ramen_proto::events::v1::DeployWork;
use ramen_store::StoreError;

use super::claim::{cancel_message, close};
use super::model::{JobRecord, JobState};
use crate::Jobs;
use crate::caller::{Caller, require};
use crate::conversions::Page;
use crate::error::{Error, Result};
use crate::model::{environment_id, now_ms};
use crate::store::ACTIVE_JOB_INDEX;

/// One parked work item and what the job last recorded.
#[derive(Clone, Debug, Default)]
pub struct DeadLetterView {
    pub sequence: u64,
    pub job_id: String,
    pub group: String,
    pub environment: String,
    pub reason: String,
    pub deliveries: u32,
    pub parked_at_ms: i64,
    pub payload_json: String,
    pub last_error: String,
}

impl Jobs {
    fn dlq(&self) -> Dlq {
        self.core.bus.dlq(&self.core.nats.dlq_stream)
    }

    pub async fn list_dead_letters(
        &self,
        ctx: &Caller,
        page: Page,
    ) -> Result<(Vec<DeadLetterView>, ramen_proto::common::v1::PageInfo)> {
        require(ctx, "", Action::Admin)?;
        let parked = self.dlq().list((page.offset + page.size + 1) as usize).await?;
        let mut views = Vec::with_capacity(parked.len());
        for message in parked {
            views.push(self.view(message).await?);
        }
        Ok(page.slice(views))
    }

    pub async fn get_dead_letter(&self, ctx: &Caller, sequence: u64) -> Result<DeadLetterView> {
        require(ctx, "", Action::Admin)?;
        let message = self.parked(sequence).await?;
        self.view(message).await
    }

    /// Puts the job back to QUEUED (refused while another deploy of its environment is live)
    /// and republishes its work item.
    pub async fn replay_dead_letter(&self, ctx: &Caller, sequence: u64) -> Result<String> {
        require(ctx, "", Action::Admin)?;
        let view = self.view(self.parked(sequence).await?).await?;
        let job = self.job(&view.job_id).await?;
        if !matches!(
            job.state,
            JobState::DeadLettered | JobState::FailedResumable | JobState::Queued
        ) {
            return Err(Error::FailedPrecondition(format!(
                "job {} is {:?}: discard its dead letter instead",
                job.id, job.state
            )));
        }
        let requeued = self
            .core
            .db
            .jobs
            .modify(&job.id, |j| {
                j.state = JobState::Queued;
                j.active = Some(environment_id(&j.group, &j.environment));
                j.work_seq = 0;
                j.holder.clear();
                j.finished_at_ms = 0;
                j.error = format!("replayed from the dead-letter stream ({})", view.reason);
                j.updated_at_ms = now_ms();
                Ok::<_, Error>(())
            })
            .await;
        match requeued {
            Ok(_) => {}
            Err(Error::Store(StoreError::UniqueViolation { index, .. }))
                if index == ACTIVE_JOB_INDEX =>
            {
                let live = self
                    .core
                    .live_job(&job.group, &job.environment)
                    .await?
                    .map(|j| j.id)
                    .unwrap_or_default();
                return Err(Error::FailedPrecondition(format!(
                    "deploy {live} of environment `{}` is live; replay after it",
                    job.environment
                )));
            }
            Err(err) => return Err(err),
        }
        let ack = self.dlq().replay(sequence).await?;
        self.record_work_seq(&job.id, ack.sequence).await;
        self.core
            .audit(
                ctx,
                "deploy.dead_letter.replay",
                &job.group,
                &format!("job/{}", job.id),
                [("sequence", sequence.to_string())],
            )
            .await;
        Ok(job.id)
    }

    pub async fn discard_dead_letter(&self, ctx: &Caller, sequence: u64) -> Result<()> {
        require(ctx, "", Action::Admin)?;
        let view = self.view(self.parked(sequence).await?).await?;
        self.dlq().discard(sequence).await?;
        if !view.job_id.is_empty() {
            self.mark_dead_lettered(
                &view.job_id,
                &format!("dead letter discarded ({})", view.reason),
            )
            .await?;
        }
        self.core
            .audit(
                ctx,
                "deploy.dead_letter.discard",
                &view.group,
                &format!("job/{}", view.job_id),
                [("sequence", sequence.to_string())],
            )
            .await;
        Ok(())
    }

    /// DEAD_LETTERED (terminal), unless the job is terminal already or a cancel was asked.
    pub(crate) async fn mark_dead_lettered(
        &self,
        job_id: &str,
        reason: &str,
    ) -> Result<Option<JobRecord>> {
        let marked = self
            .core
            .db
            .jobs
            .modify(job_id, |j| {
                if j.state.is_terminal() {
                    return Ok(false);
                }
                let (state, error) = if j.cancel_requested {
                    (JobState::Cancelled, cancel_message(j))
                } else {
                    (JobState::DeadLettered, reason.to_owned())
                };
                close(j, state, error);
                Ok::<_, Error>(true)
            })
            .await;
        match marked {
            Ok((written, true)) => {
                self.announce_finished(&written.value).await;
                Ok(Some(written.value))
            }
            Ok(_) | Err(Error::Store(StoreError::NotFound { .. })) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn parked(&self, sequence: u64) -> Result<ParkedMessage> {
        match self.dlq().get(sequence).await {
            Ok(message) => Ok(message),
            Err(ramen_bus::BusError::NotFound { .. }) => {
                Err(Error::NotFound(format!("dead letter {sequence}")))
            }
            Err(err) => Err(err.into()),
        }
    }

    async fn view(&self, message: ParkedMessage) -> Result<DeadLetterView> {
        let work: DeployWork = serde_json::from_slice(&message.payload).unwrap_or_default();
        let last_error = match self.core.db.jobs.get(&work.job_id).await {
            Ok(Some(job)) => job.value.error,
            _ => String::new(),
        };
        Ok(DeadLetterView {
            sequence: message.sequence,
            job_id: work.job_id,
            group: work.group,
            environment: work.environment,
            reason: message.reason,
            deliveries: message.deliveries.max(0) as u32,
            parked_at_ms: (message.parked_at.unix_timestamp_nanos() / 1_000_000) as i64,
            payload_json: String::from_utf8_lossy(&message.payload).into_owned(),
            last_error,
        })
    }
}
