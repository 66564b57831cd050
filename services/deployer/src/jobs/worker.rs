//! The job worker: pulls `DeployWork` from the shared durable consumer (up to
//! `jobs_per_process` at once), claims each with a KV lease, runs it with a heartbeat, and
//! settles the delivery:
//! - terminal outcome → ack; parked for review (REVIEW) → ack; a retryable failure → FAILED_RESUMABLE + nak with delay, or on
//!   the last allowed delivery DEAD_LETTERED + parked on the DLQ with the reason;
//! - drain (SIGTERM): `complete` lets the job run up to the drain cap, `interrupt` stops it at
//!   once; either way it is checkpointed (FAILED_RESUMABLE) and handed back with a nak;
//! - a lost lease stops the job without settling: whoever holds it now owns the outcome.

use std::sync::Arc;

use ramen_bus::{Delivery, Kv, Lease, LeaseError, WorkConsumer};
use ramen_config::DrainMode;
use ramen_proto::events::v1::DeployWork;
use ramen_service::Platform;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::claim::Claim;
use super::model::JobState;
use super::recorder::JobRun;
use crate::Jobs;
use crate::error::{Error, Result};

pub(crate) fn spawn(
    deployer: &Arc<Jobs>,
    platform: &Platform,
    consumer: WorkConsumer<DeployWork>,
    kv: Kv,
) {
    let deployer = deployer.clone();
    platform.tasks.spawn("deploy-jobs", move |stop| async move {
        let crashed = deployer.crashed.clone();
        tokio::select! {
            () = consume(deployer, consumer, kv, stop) => {}
            () = crashed.cancelled() => tracing::warn!("deployer crashed: jobs abandoned"),
        }
    });
}

/// Pulls while below the per-process limit; on `stop` pulls no more and lets the running jobs
/// drain (each applies the drain mode itself).
async fn consume(
    deployer: Arc<Jobs>,
    mut consumer: WorkConsumer<DeployWork>,
    kv: Kv,
    stop: CancellationToken,
) {
    let mut running = JoinSet::new();
    let limit = deployer.core.settings.jobs_per_process.max(1);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = running.join_next(), if !running.is_empty() => {}
            next = consumer.next(), if running.len() < limit => match next {
                Ok(delivery) => {
                    running.spawn(handle(deployer.clone(), delivery, kv.clone(), stop.clone()));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "reading deploy work failed");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            },
        }
    }
    while running.join_next().await.is_some() {}
}

/// What stopped a claimed job before it finished.
enum Stopped {
    Done(JobState, String),
    /// Parked for review: the record says so; the work item is done with.
    Parked,
    Retry(Error),
    Drained(&'static str),
    LeaseLost,
}

async fn handle(
    deployer: Arc<Jobs>,
    delivery: Delivery<DeployWork>,
    kv: Kv,
    stop: CancellationToken,
) {
    let job_id = delivery.payload.job_id.clone();
    if let Err(err) = process(&deployer, &delivery, &kv, &stop).await {
        tracing::warn!(job = %job_id, error = %err, "settling a deploy delivery failed");
    }
}

async fn process(
    deployer: &Arc<Jobs>,
    delivery: &Delivery<DeployWork>,
    kv: &Kv,
    stop: &CancellationToken,
) -> Result<()> {
    let job_id = delivery.payload.job_id.clone();
    // Terminal jobs and stale duplicates are dropped before contending for the lease.
    if let Some(why) = deployer.nothing_to_run(&job_id, delivery.stream_sequence()).await? {
        tracing::info!(job = %job_id, why, "deploy work dropped");
        delivery.ack().await?;
        return Ok(());
    }
    let mut lease = match Lease::acquire(kv, &super::lease_key(&job_id), &deployer.instance).await {
        Ok(lease) => lease,
        Err(LeaseError::Held { holder, .. }) => {
            tracing::info!(job = %job_id, %holder, "job lease held elsewhere; redelivering later");
            delivery.nak(Some(deployer.core.settings.lease_ttl)).await?;
            return Ok(());
        }
        Err(err) => {
            delivery.nak(Some(deployer.core.settings.retry_delay)).await?;
            return Err(Error::Internal(err.to_string()));
        }
    };
    let claim =
        match deployer.claim_job(&job_id, delivery.stream_sequence(), delivery.delivered()).await {
            Ok(Claim::Run(claim)) => claim,
            Ok(Claim::Drop(why)) => {
                tracing::info!(job = %job_id, why, "deploy work dropped");
                delivery.ack().await?;
                release(lease).await;
                return Ok(());
            }
            Ok(Claim::Cancelled) => {
                delivery.ack().await?;
                release(lease).await;
                return Ok(());
            }
            Err(err) => {
                delivery.nak(Some(deployer.core.settings.retry_delay)).await?;
                release(lease).await;
                return Err(err);
            }
        };
    tracing::info!(job = %job_id, claim, attempt = delivery.delivered(), "deploy job claimed");
    let run = JobRun { deployer: deployer.clone(), job_id: job_id.clone(), claim };
    // One span per claimed run, parented to the trace of the request that started the deploy.
    let span = tracing::info_span!("deploy.job", job = %job_id, attempt = delivery.delivered());
    if let Some(parent) = delivery.traceparent() {
        ramen_telemetry::set_parent_from(&span, &parent);
    }
    deployer.metrics.active.inc();
    let stopped = tokio::select! {
        outcome = super::pipeline::run(run).instrument(span) => match outcome {
            Ok((JobState::Review, _)) => Stopped::Parked,
            Ok((state, error)) => Stopped::Done(state, error),
            Err(Error::LeaseLost(_)) => Stopped::LeaseLost,
            Err(err) => Stopped::Retry(err),
        },
        () = heartbeat(deployer, &mut lease, delivery) => Stopped::LeaseLost,
        why = drained(deployer, stop) => Stopped::Drained(why),
    };
    deployer.metrics.active.dec();
    settle(deployer, delivery, lease, claim, stopped).await
}

async fn settle(
    deployer: &Jobs,
    delivery: &Delivery<DeployWork>,
    lease: Lease,
    claim: u64,
    stopped: Stopped,
) -> Result<()> {
    let job_id = &delivery.payload.job_id;
    match stopped {
        Stopped::Done(state, error) => {
            let job = deployer.finish_job(job_id, claim, state, error).await?;
            tracing::info!(job = %job_id, state = ?job.state, "deploy job finished");
            delivery.ack().await?;
            if job.state == JobState::Succeeded {
                collect_artifacts(deployer, &job.group).await;
            }
        }
        Stopped::Parked => {
            tracing::info!(job = %job_id, "deploy job parked for a surface review");
            delivery.ack().await?;
        }
        Stopped::Retry(err) if err.is_retryable() && !delivery.is_last_attempt() => {
            let why = format!("{err} (attempt {}; retried)", delivery.delivered());
            deployer.metrics.handed_back("retryable_failure");
            let job = deployer.suspend_job(job_id, claim, &why).await?;
            if job.state.is_terminal() {
                delivery.ack().await?;
            } else {
                delivery.nak(Some(deployer.core.settings.retry_delay)).await?;
            }
        }
        Stopped::Retry(err) if err.is_retryable() => {
            let reason = format!("max deliveries ({}) exhausted: {err}", delivery.delivered());
            let job = deployer.suspend_job(job_id, claim, &reason).await?;
            if job.state.is_terminal() {
                delivery.ack().await?;
            } else {
                deployer.mark_dead_lettered(job_id, &reason).await?;
                delivery.dead_letter(&reason).await?;
            }
        }
        Stopped::Retry(err) => {
            deployer.finish_job(job_id, claim, JobState::Failed, err.to_string()).await?;
            delivery.ack().await?;
        }
        Stopped::Drained(why) => {
            let job = deployer.suspend_job(job_id, claim, why).await?;
            deployer.metrics.handed_back("drain");
            tracing::info!(job = %job_id, state = ?job.state, "deploy job handed back ({why})");
            if job.state.is_terminal() { delivery.ack().await? } else { delivery.nak(None).await? }
        }
        Stopped::LeaseLost => {
            tracing::warn!(job = %job_id, "lost the job's lease; stopping without settling");
            return Ok(());
        }
    }
    release(lease).await;
    Ok(())
}

/// Refreshes the lease and the delivery's ack-wait; returns when the lease is lost.
async fn heartbeat(deployer: &Jobs, lease: &mut Lease, delivery: &Delivery<DeployWork>) {
    loop {
        tokio::time::sleep(deployer.core.settings.heartbeat).await;
        match lease.refresh().await {
            Ok(()) => {}
            Err(LeaseError::Lost { .. }) => return,
            Err(err) => {
                deployer.metrics.heartbeat_errors.inc();
                tracing::warn!(job = %delivery.payload.job_id, error = %err, "lease refresh failed");
            }
        }
        if let Err(err) = delivery.in_progress().await {
            deployer.metrics.heartbeat_errors.inc();
            tracing::warn!(job = %delivery.payload.job_id, error = %err, "in-progress heartbeat failed");
        }
    }
}

/// Completes when the process drains and the job must be handed back.
async fn drained(deployer: &Jobs, stop: &CancellationToken) -> &'static str {
    stop.cancelled().await;
    match deployer.core.settings.drain_mode {
        DrainMode::Interrupt => "interrupted by a drain (interrupt mode)",
        DrainMode::Complete => {
            tokio::time::sleep(deployer.core.settings.drain_cap).await;
            "drain timeout reached (complete mode): checkpointed and handed back"
        }
    }
}

async fn release(lease: Lease) {
    if let Err(err) = lease.release().await {
        tracing::debug!(error = %err, "lease release");
    }
}

/// After a success, what the group no longer needs goes from the blob store. Best effort: a
/// failure is logged and the next success tries again.
async fn collect_artifacts(deployer: &Jobs, group: &str) {
    match crate::artifacts::collect(&deployer.core, group).await {
        Ok(collected) if collected.snapshots.is_empty() && collected.environments.is_empty() => {}
        Ok(collected) => tracing::info!(
            %group,
            snapshots = ?collected.snapshots,
            environments = ?collected.environments,
            "unused deploy artifacts deleted"
        ),
        Err(err) => tracing::warn!(%group, %err, "collecting unused deploy artifacts failed"),
    }
}
