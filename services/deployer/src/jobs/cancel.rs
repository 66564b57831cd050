//! `CancelJob`: terminal, and it wins. A job nobody runs (queued, handed back, parked for
//! review, or whose holder is gone) is cancelled on the spot, unless its canary ran: then it is
//! flagged and run once more (a parked one queued again), and its zones cancel at the next step
//! boundary, scaling the canary back to zero. A running one is flagged and its holder stops at
//! the next step boundary the same way. A job later found resumable or dead-lettered while
//! flagged ends CANCELLED instead.

use ramen_proto::auth::v1::Action;
use ramen_proto::events::v1::JobCancelled;
use ramen_store::Query;

use super::claim::{canary_touched, cancel_message, close};
use super::model::{JobRecord, JobState};
use crate::Jobs;
use crate::caller::{Caller, require};
use crate::error::{Error, Result};
use crate::model::now_ms;

impl Jobs {
    pub async fn cancel_job(&self, ctx: &Caller, job_id: &str, reason: &str) -> Result<JobRecord> {
        let job = self.job(job_id).await?;
        require(ctx, &job.group, Action::Deploy)?;
        match job.state {
            JobState::Cancelled => return Ok(job),
            JobState::Succeeded | JobState::Failed | JobState::DeadLettered => {
                return Err(Error::FailedPrecondition(format!(
                    "job {job_id} already finished ({:?}); nothing to cancel",
                    job.state
                )));
            }
            _ => {}
        }
        let holder_alive = match job.state {
            JobState::Running => self.lease_held(job_id).await?,
            _ => false,
        };
        let reason = reason.trim().to_owned();
        let (written, closed) = self
            .core
            .db
            .jobs
            .modify(job_id, |j| {
                if j.state.is_terminal() {
                    return Ok(false);
                }
                j.cancel_requested = true;
                j.cancel_reason = reason.clone();
                j.updated_at_ms = now_ms();
                let waits = matches!(
                    j.state,
                    JobState::Queued | JobState::FailedResumable | JobState::Review
                );
                let orphaned = j.state == JobState::Running && !holder_alive;
                if !waits && !orphaned {
                    return Ok(false);
                }
                if waits && canary_touched(j) {
                    // Someone has to scale the canary back: the job runs once more, and its
                    // zones cancel at their next step boundary.
                    if j.state == JobState::Review {
                        super::review::requeue(j);
                    }
                    return Ok(false);
                }
                close(j, JobState::Cancelled, cancel_message(j));
                Ok::<_, Error>(true)
            })
            .await?;
        let job = written.value;
        if closed {
            self.announce_finished(&job).await;
        } else {
            self.publish_work(&job).await;
        }
        let event = JobCancelled {
            meta: Some(crate::ports::events::meta(ctx)),
            job_id: job.id.clone(),
            group: job.group.clone(),
            environment: job.environment.clone(),
            reason,
        };
        self.core.events.publish(&event).await;
        self.core
            .audit(
                ctx,
                "deploy.cancel",
                &job.group,
                &format!("job/{job_id}"),
                [("environment", job.environment.clone())],
            )
            .await;
        Ok(job)
    }

    /// Cancels every live job of a group (group deletion).
    pub(crate) async fn cancel_group_jobs(&self, ctx: &Caller, group: &str) -> Result<()> {
        let live =
            self.core.db.jobs.find(&Query::new().eq("group", group).exists("active", true)).await?;
        for job in live {
            match self.cancel_job(ctx, &job.id, "group deleted").await {
                Ok(_) | Err(Error::FailedPrecondition(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    pub(crate) async fn job(&self, job_id: &str) -> Result<JobRecord> {
        if job_id.is_empty() || job_id.len() > 64 {
            return Err(Error::invalid("job_id", "is not a job id"));
        }
        let found = self.core.db.jobs.get(job_id).await?;
        found.map(|j| j.value).ok_or_else(|| Error::NotFound(format!("job {job_id}")))
    }

    /// Whether a deployer holds (and keeps refreshing) the job's lease.
    pub(crate) async fn lease_held(&self, job_id: &str) -> Result<bool> {
        let kv = super::lease_bucket(self).await?;
        Ok(kv.get(&super::lease_key(job_id)).await?.is_some())
    }
}
