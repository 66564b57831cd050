//! One claimed run of a job: resolve the ref (once: a resumed job keeps its commit), then the
//! zones' pipelines in parallel up to the limit, skipping zones already done. A zone's
//! pipeline resumes at its first step not succeeded; a failure in CANARY..STABLE scales the
//! canary back to zero (CANARY_ROLLBACK) and leaves stable as it was.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use tracing::Instrument;

use super::model::{JobState, Step};
use super::recorder::{JobRun, StepEnd};
use super::steps::{Pipeline, StepError};
use crate::error::{Error, Result};
use crate::model::Status;

/// Runs the job to a terminal state (`Ok`), to REVIEW (`Ok`, parked: the record already says
/// so), or stops on an error to retry (`Err`: retryable failures, a lost lease).
pub(crate) async fn run(run: JobRun) -> Result<(JobState, String)> {
    let pipeline = match prepare(&run).await? {
        Ok(pipeline) => Arc::new(pipeline),
        Err(failure) => return Ok((JobState::Failed, failure)),
    };
    loop {
        let job = run.current().await?;
        let zones: Vec<String> =
            job.zones.iter().filter(|z| !z.status.is_done()).map(|z| z.zone.clone()).collect();
        let results: Vec<Result<ZoneEnd>> = futures::stream::iter(zones)
            .map(|zone| {
                let pipeline = pipeline.clone();
                async move { pipeline.zone(&zone).await }
            })
            .buffer_unordered(run.deployer.core.settings.zone_parallelism.max(1))
            .collect()
            .await;
        // A zone that has to retry (or a lost lease) stops the job; zones that finished stay
        // done.
        let mut waiting = false;
        for result in results {
            waiting |= matches!(result?, ZoneEnd::Waiting);
        }
        if !waiting {
            return Ok(outcome(&run.current().await?));
        }
        // Every zone is done or waits for the review: park, unless it was decided meanwhile
        // (or a cancel came), and then the waiting zones go on.
        if run.deployer.park_for_review(&run.job_id, run.claim).await? {
            return Ok((JobState::Review, String::new()));
        }
    }
}

/// Where a zone's pipeline stopped in this run.
pub(crate) enum ZoneEnd {
    /// Succeeded, failed, cancelled or skipped (the record has which).
    Done,
    /// In the REVIEW step, waiting for a decision.
    Waiting,
}

/// What every zone shares: group, environment, credentials and the commit (resolved on the
/// first run only). `Ok(Err(why))` fails the job for good.
async fn prepare(run: &JobRun) -> Result<Result<Pipeline, String>> {
    let deployer = &run.deployer;
    let job = run.current().await?;
    let found = async {
        let group = deployer.core.group(&job.group).await?.value;
        let env = deployer.core.environment(&job.group, &job.environment).await?;
        Ok::<_, Error>((group, env))
    };
    let (group, env) = match found.await {
        Ok(found) => found,
        Err(Error::NotFound(what)) => return Ok(Err(format!("{what} (deleted)"))),
        Err(err) => return Err(err),
    };
    let creds = match deployer.app.repo_credentials(&group, &env.name).await {
        Ok(creds) => creds,
        Err(err) if err.is_retryable() => return Err(err),
        Err(err) => return Ok(Err(err.to_string())),
    };
    let commit = if job.commit.is_empty() {
        let resolved = deployer
            .core
            .repos
            .fetch_and_resolve(&group.name, &group.repo_url, &job.git_ref, creds.as_ref())
            .await;
        match resolved {
            Ok(commit) => {
                run.set_commit(&commit).await?;
                commit
            }
            Err(err) if err.is_retryable() => return Err(err.into()),
            Err(err) => return Ok(Err(err.to_string())),
        }
    } else {
        job.commit.clone()
    };
    Ok(Ok(Pipeline {
        run: run.clone(),
        group,
        env,
        git_ref: job.git_ref.clone(),
        commit,
        creds,
        snapshot: Default::default(),
        environment_build: Default::default(),
        upload_reported: AtomicBool::new(false),
        smoke_key: super::smoke_key(&deployer.core.settings.smoke_secret, &job.id),
    }))
}

/// Every zone succeeded; or the failed zones with their errors; or cancelled.
fn outcome(job: &super::model::JobRecord) -> (JobState, String) {
    let failures: Vec<String> = job
        .zones
        .iter()
        .filter(|z| z.status == Status::Failed)
        .map(|z| {
            let failed = z.steps.iter().find(|s| s.status == Status::Failed);
            format!("{}: {}", z.zone, failed.map_or("failed", |s| s.error.as_str()))
        })
        .collect();
    if job.zones.iter().all(|z| z.status == Status::Succeeded) {
        (JobState::Succeeded, String::new())
    } else if !failures.is_empty() {
        (JobState::Failed, failures.join("; "))
    } else {
        (JobState::Cancelled, super::claim::cancel_message(job))
    }
}

impl Pipeline {
    /// The zone's pipeline from where it stands: done (its status is on the record), or
    /// waiting for review.
    pub async fn zone(&self, zone: &str) -> Result<ZoneEnd> {
        let job = self.run.current().await?;
        let Some(run) = job.zone(zone).cloned() else { return Ok(ZoneEnd::Done) };
        if run.status.is_done() {
            return Ok(ZoneEnd::Done);
        }
        if let Some(failed) =
            run.steps.iter().find(|s| s.status == Status::Failed && s.step != Step::CanaryRollback)
        {
            return self.fail(zone, failed.step).await.map(|_| ZoneEnd::Done);
        }
        for step in Step::PIPELINE {
            if run.step(step).is_some_and(|s| s.status == Status::Succeeded) {
                continue;
            }
            if self.run.current().await?.cancel_requested {
                return self.cancel(zone).await.map(|_| ZoneEnd::Done);
            }
            // A zone coming back to a review it waits for is still the same run of the step.
            let waiting =
                run.step(step).is_some_and(|s| s.status == Status::Running) && step == Step::Review;
            if !waiting {
                self.run.started(zone, step).await?;
            }
            let span = tracing::info_span!("deploy.step", %zone, step = step.name());
            match self.attempt(zone, step).instrument(span).await {
                Ok(end) => self.run.ended(zone, step, Status::Succeeded, end).await?,
                Err(StepError::Failed(end)) => {
                    self.run.ended(zone, step, Status::Failed, end).await?;
                    return self.fail(zone, step).await.map(|_| ZoneEnd::Done);
                }
                Err(StepError::Retry(err)) => return Err(err),
                Err(StepError::Park) => return Ok(ZoneEnd::Waiting),
            }
        }
        self.finish(zone).await?;
        self.run.zone_ended(zone, Status::Succeeded).await?;
        Ok(ZoneEnd::Done)
    }

    /// A step, retried in place a few times while its error is an outage.
    async fn attempt(&self, zone: &str, step: Step) -> Result<StepEnd, StepError> {
        let mut delay = std::time::Duration::from_millis(500);
        let mut tries = 0;
        loop {
            tries += 1;
            match self.step(zone, step).await {
                Err(StepError::Retry(err)) if tries < 3 && err.is_retryable() => {
                    let _ =
                        self.run.log(zone, step, format!("{err}; trying again in {delay:?}")).await;
                    tokio::time::sleep(delay).await;
                    delay *= 4;
                }
                other => return other,
            }
        }
    }

    /// After a failed step: the rest skipped, the canary scaled back to zero if it was touched.
    async fn fail(&self, zone: &str, failed: Step) -> Result<Status> {
        let job = self.run.current().await?;
        let run = job
            .zone(zone)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("zone {zone} left the job")))?;
        for step in Step::PIPELINE {
            if run.step(step).is_some_and(|s| s.status == Status::Pending) {
                self.run.ended(zone, step, Status::Skipped, StepEnd::default()).await?;
            }
        }
        let canary_ran = run.step(Step::Canary).is_some_and(|s| s.started_at_ms > 0);
        if failed.touches_canary() || canary_ran {
            self.rollback(zone).await?;
        }
        self.drop_smoke_key(zone).await;
        self.run.zone_ended(zone, Status::Failed).await?;
        Ok(Status::Failed)
    }

    /// An operator cancel reached this zone at a step boundary.
    async fn cancel(&self, zone: &str) -> Result<Status> {
        let job = self.run.current().await?;
        let run = job
            .zone(zone)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("zone {zone} left the job")))?;
        if run.step(Step::Canary).is_some_and(|s| s.started_at_ms > 0) {
            self.rollback(zone).await?;
        }
        // Pending steps, and a review the zone was waiting in.
        for step in Step::PIPELINE {
            if run.step(step).is_some_and(|s| matches!(s.status, Status::Pending | Status::Running))
            {
                self.run.ended(zone, step, Status::Cancelled, StepEnd::default()).await?;
            }
        }
        self.drop_smoke_key(zone).await;
        self.run.zone_ended(zone, Status::Cancelled).await?;
        Ok(Status::Cancelled)
    }

    async fn rollback(&self, zone: &str) -> Result<()> {
        let done = self
            .run
            .current()
            .await?
            .zone(zone)
            .and_then(|z| z.step(Step::CanaryRollback))
            .is_some_and(|s| s.status == Status::Succeeded);
        if done {
            return Ok(());
        }
        self.run.started(zone, Step::CanaryRollback).await?;
        match self.attempt(zone, Step::CanaryRollback).await {
            Ok(end) => self.run.ended(zone, Step::CanaryRollback, Status::Succeeded, end).await,
            Err(StepError::Failed(end)) => {
                self.run.ended(zone, Step::CanaryRollback, Status::Failed, end).await
            }
            Err(StepError::Retry(err)) => Err(err),
            Err(StepError::Park) => Err(Error::Internal("the rollback cannot wait".into())),
        }
    }
}
