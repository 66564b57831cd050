//! The surface review: a job whose canary changed the surface of an environment that reviews
//! changes parks in REVIEW (canary up, stable untouched, no holder, no work item) until a group
//! admin decides or the review expires. A decision goes onto the job record, and a parked job
//! goes back on the work queue: the resumed REVIEW step reads the decision and goes on to
//! STABLE, or fails the zone, which scales the canary to zero as any failure does.
//!
//! A decision can also arrive while the job still runs other zones: it is recorded, and the
//! run that was about to park finds it and carries on instead.

use ramen_proto::auth::v1::Action;
use ramen_service::rules::REVIEW_REASON;
use ramen_store::Query;

use super::model::{JobRecord, JobState, ReviewDecision};
use crate::Jobs;
use crate::caller::{Caller, require};
use crate::error::{Error, Result};
use crate::model::now_ms;

impl Jobs {
    /// `DecideReview`: a group admin approves or rejects the job's open review.
    pub async fn decide_review(
        &self,
        ctx: &Caller,
        job_id: &str,
        approve: bool,
        reason: &str,
    ) -> Result<JobRecord> {
        let job = self.job(job_id).await?;
        require(ctx, &job.group, Action::Deploy)?;
        if !REVIEW_REASON.accepts(reason) {
            return Err(Error::invalid("reason", format!("must be {}", REVIEW_REASON.what)));
        }
        let decision = if approve { ReviewDecision::Approved } else { ReviewDecision::Rejected };
        let job = self.decide(job_id, decision, ctx.audit_actor(), reason).await?;
        let action = if approve { "deploy.review.approve" } else { "deploy.review.reject" };
        self.core
            .audit(
                ctx,
                action,
                &job.group,
                &format!("job/{job_id}"),
                [
                    ("environment", job.environment.clone()),
                    ("commit", job.commit.clone()),
                    ("reason", reason.to_owned()),
                ],
            )
            .await;
        Ok(job)
    }

    /// A pending review past its time: recorded as expired (a rejection), by the deployer.
    pub(crate) async fn expire_review(&self, job_id: &str) -> Result<JobRecord> {
        let deployer = crate::caller::deployer();
        let job = self.decide(job_id, ReviewDecision::Expired, deployer.audit_actor(), "").await?;
        self.core
            .audit(
                &deployer,
                "deploy.review.expire",
                &job.group,
                &format!("job/{job_id}"),
                [("environment", job.environment.clone()), ("commit", job.commit.clone())],
            )
            .await;
        Ok(job)
    }

    /// Records the decision on a pending review; a parked job goes back on the work queue.
    async fn decide(
        &self,
        job_id: &str,
        decision: ReviewDecision,
        by: &str,
        reason: &str,
    ) -> Result<JobRecord> {
        let now = now_ms();
        let (written, ()) = self
            .core
            .db
            .jobs
            .modify(job_id, |job| {
                let review = match job.review.as_mut() {
                    Some(review) if !job.state.is_terminal() => review,
                    _ => {
                        return Err(Error::FailedPrecondition(format!(
                            "job {job_id} has no surface review open (it is {})",
                            job.state.as_str()
                        )));
                    }
                };
                if review.decision != ReviewDecision::Pending {
                    return Err(Error::FailedPrecondition(format!(
                        "job {job_id}'s review was already decided ({:?} by {})",
                        review.decision, review.decided_by
                    )));
                }
                review.decision = decision;
                review.decided_by = by.to_owned();
                review.decided_at_ms = now;
                review.reason = reason.to_owned();
                if job.state == JobState::Review {
                    requeue(job);
                }
                job.updated_at_ms = now;
                Ok(())
            })
            .await?;
        let job = written.value;
        self.publish_work(&job).await;
        Ok(job)
    }

    /// Parks a running job whose zones wait for review (fenced: only the holder does). `false`
    /// when the review was decided meanwhile: the run goes on instead.
    pub(crate) async fn park_for_review(&self, job_id: &str, claim: u64) -> Result<bool> {
        let (_, parked) = self
            .fenced(job_id, claim, |job| {
                let pending =
                    job.review.as_ref().is_some_and(|r| r.decision == ReviewDecision::Pending);
                if pending && !job.cancel_requested {
                    job.state = JobState::Review;
                    job.holder.clear();
                }
                pending && !job.cancel_requested
            })
            .await?;
        Ok(parked)
    }

    /// Parked reviews past their time expire (every replica sweeps; the write is checked).
    pub(crate) async fn sweep_expired_reviews(&self) -> Result<()> {
        let parked = self.core.db.jobs.find(&Query::new().eq("state", "review")).await?;
        let now = now_ms();
        for job in parked.into_iter().map(|j| j.value) {
            let expired = job
                .review
                .as_ref()
                .is_some_and(|r| r.decision == ReviewDecision::Pending && r.expires_at_ms <= now);
            if !expired {
                continue;
            }
            match self.expire_review(&job.id).await {
                Ok(_) | Err(Error::FailedPrecondition(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// Back on the work queue: QUEUED with no work item yet (`publish_work` sends a fresh one).
pub(crate) fn requeue(job: &mut JobRecord) {
    job.state = JobState::Queued;
    job.work_seq = 0;
    job.holder.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requeued_job_waits_for_a_fresh_work_item_with_no_holder() {
        let mut job = JobRecord {
            state: JobState::Review,
            work_seq: 41,
            holder: "deployer-a".into(),
            claim: 3,
            ..JobRecord::default()
        };
        requeue(&mut job);
        assert_eq!((job.state, job.work_seq, job.holder.as_str()), (JobState::Queued, 0, ""));
        assert_eq!(job.claim, 3, "the claim number stays: the next work item's id is new by it");
    }
}
