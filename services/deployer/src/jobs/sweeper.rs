//! The orphan sweeper, in every replica (each fix is a checked write, so two sweepers agree):
//! - RUNNING jobs whose lease is gone (the holder stopped heartbeating for a whole TTL) →
//!   FAILED_RESUMABLE: their work item is redelivered once its ack-wait lapses and resumes;
//! - jobs whose work item the dead-letter mover parked → DEAD_LETTERED;
//! - QUEUED jobs whose work item was never published → published;
//! - REVIEW jobs whose review expired → queued again, to fail their waiting zones;
//! - deleted environments whose teardowns finished → records removed; unfinished group
//!   deletions → resumed.

use std::sync::Arc;

use ramen_bus::Kv;
use ramen_proto::events::v1::DeployWork;
use ramen_service::Platform;
use ramen_store::Query;

use super::claim::{cancel_message, close};
use super::model::JobState;
use crate::error::{Error, Result};
use crate::model::now_ms;
use crate::{Deployer, Jobs};

pub(crate) fn spawn(deployer: &Arc<Deployer>, platform: &Platform, kv: Kv) {
    let deployer = deployer.clone();
    platform.tasks.spawn("deploy-sweeper", move |stop| async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = deployer.jobs.crashed.cancelled() => return,
                () = tokio::time::sleep(deployer.jobs.core.settings.sweep_interval) => {}
            }
            if let Err(err) = deployer.sweep(&kv).await {
                tracing::warn!(error = %err, "sweep failed");
            }
        }
    });
}

impl Jobs {
    /// The jobs' part of a sweep (`Deployer::sweep` adds the registry's).
    pub(crate) async fn sweep(&self, kv: &Kv) -> Result<()> {
        self.sweep_orphans(kv).await?;
        self.sweep_dead_letters().await?;
        self.sweep_expired_reviews().await?;
        self.sweep_unpublished().await
    }

    async fn sweep_orphans(&self, kv: &Kv) -> Result<()> {
        let running = self.core.db.jobs.find(&Query::new().eq("state", "running")).await?;
        let stale_before = now_ms() - self.core.settings.lease_ttl.as_millis() as i64;
        for job in running.into_iter().map(|j| j.value) {
            if job.updated_at_ms > stale_before
                || kv.get(&super::lease_key(&job.id)).await?.is_some()
            {
                continue;
            }
            let (holder, claim) = (job.holder.clone(), job.claim);
            let marked = self
                .core.db
                .jobs
                .modify(&job.id, |j| {
                    if j.state != JobState::Running || j.holder != holder || j.claim != claim {
                        return Ok(false);
                    }
                    if j.cancel_requested {
                        close(j, JobState::Cancelled, cancel_message(j));
                        return Ok(true);
                    }
                    j.state = JobState::FailedResumable;
                    j.error = format!("deployer {holder} stopped heartbeating (lease lapsed); resumes on redelivery");
                    j.holder.clear();
                    j.updated_at_ms = now_ms();
                    Ok::<_, Error>(true)
                })
                .await?;
            if let (written, true) = marked {
                tracing::warn!(job = %job.id, %holder, state = ?written.value.state, "orphaned job marked");
                if written.value.state.is_terminal() {
                    self.announce_finished(&written.value).await;
                }
            }
        }
        Ok(())
    }

    /// Parked by the advisory path (the process died on the last attempt): the job learns it.
    async fn sweep_dead_letters(&self) -> Result<()> {
        let parked = self.core.bus.dlq(&self.core.nats.dlq_stream).list(1000).await?;
        for message in parked {
            let Ok(work) = serde_json::from_slice::<DeployWork>(&message.payload) else { continue };
            let Some(job) = self.core.db.jobs.get(&work.job_id).await? else { continue };
            let current =
                job.value.work_seq == 0 || job.value.work_seq == message.original_sequence;
            if !job.value.state.is_terminal() && job.value.state != JobState::Queued && current {
                let reason = format!(
                    "parked on the dead-letter stream: {} after {} deliveries",
                    message.reason, message.deliveries
                );
                self.mark_dead_lettered(&work.job_id, &reason).await?;
            }
        }
        Ok(())
    }

    async fn sweep_unpublished(&self) -> Result<()> {
        let queued =
            self.core.db.jobs.find(&Query::new().eq("state", "queued").eq("work_seq", 0)).await?;
        let settled = now_ms() - 5_000;
        for job in queued.into_iter().map(|j| j.value) {
            if job.updated_at_ms < settled {
                self.publish_work(&job).await;
            }
        }
        Ok(())
    }
}
