//! `StartDeploy`: the job stored QUEUED, then its work item published with the job id as
//! `Nats-Msg-Id`. Two unique indexes make the refusals atomic: one live deploy per
//! environment (`active`), one job per idempotency key.

use ramen_proto::auth::v1::Action;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::{DeployRequested, DeployWork};
use ramen_store::{Filter, StoreError};

use super::model::{JobRecord, JobState, ZoneRun};
use crate::caller::{Caller, require};
use crate::error::{Error, Result};
use crate::git::refs::check_ref;
use crate::model::{environment_id, now_ms};
use crate::store::{ACTIVE_JOB_INDEX, IDEMPOTENCY_INDEX};
use crate::{Jobs, validate};

impl Jobs {
    /// The job id, and whether the idempotency key matched an existing job.
    pub async fn start_deploy(
        &self,
        ctx: &Caller,
        r: pb::StartDeployRequest,
    ) -> Result<(JobRecord, bool)> {
        let outcome = self.submit(ctx, r).await;
        self.metrics.created(match &outcome {
            Ok((_, false)) => "created",
            Ok((_, true)) => "replayed",
            Err(_) => "refused",
        });
        outcome
    }

    async fn submit(&self, ctx: &Caller, r: pb::StartDeployRequest) -> Result<(JobRecord, bool)> {
        validate::dns_label("group", &r.group)?;
        validate::dns_label("environment", &r.environment)?;
        require(ctx, &r.group, Action::Deploy)?;
        let key = if r.idempotency_key.is_empty() {
            None
        } else {
            validate::idempotency_key(&r.idempotency_key)?;
            Some(format!("{}.{}", environment_id(&r.group, &r.environment), r.idempotency_key))
        };
        if let Some(existing) = self.job_by_key(key.as_deref()).await? {
            self.publish_work(&existing).await;
            return Ok((existing, true));
        }
        let job = self.new_job(ctx, &r, key).await?;
        if let Some(existing) = self.insert_job(&job).await? {
            return Ok((existing, true));
        }
        self.publish_work(&job).await;
        let event = DeployRequested {
            meta: Some(crate::ports::events::meta(ctx)),
            job_id: job.id.clone(),
            group: job.group.clone(),
            environment: job.environment.clone(),
            git_ref: job.git_ref.clone(),
            zones: job.zones.iter().map(|z| z.zone.clone()).collect(),
        };
        self.core.events.publish(&event).await;
        let target = format!("env/{}", job.environment);
        let details = [("job_id", job.id.clone()), ("git_ref", job.git_ref.clone())];
        self.core.audit(ctx, "deploy.start", &job.group, &target, details).await;
        Ok((job, false))
    }

    async fn job_by_key(&self, key: Option<&str>) -> Result<Option<JobRecord>> {
        let Some(key) = key else { return Ok(None) };
        let found = self.core.db.jobs.find_one(Filter::new().eq("idempotency_key", key)).await?;
        Ok(found.map(|j| j.value))
    }

    /// The QUEUED job for the request: the ref is the request's, the environment's, or the
    /// group's default, in that order.
    async fn new_job(
        &self,
        ctx: &Caller,
        r: &pb::StartDeployRequest,
        key: Option<String>,
    ) -> Result<JobRecord> {
        let group = self.core.active_group(&r.group).await?;
        let env = self.core.environment(&r.group, &r.environment).await?;
        if env.deleting {
            let message = format!("environment `{}` is being deleted", env.name);
            return Err(Error::FailedPrecondition(message));
        }
        if env.zones.is_empty() {
            let message = format!("environment `{}` has no zones to deploy to", env.name);
            return Err(Error::FailedPrecondition(message));
        }
        let git_ref = [r.git_ref.as_str(), env.git_ref.as_str(), group.default_ref.as_str()]
            .into_iter()
            .find(|r| !r.is_empty())
            .unwrap_or("main")
            .to_owned();
        check_ref(&git_ref)?;
        let now = now_ms();
        Ok(JobRecord {
            id: uuid::Uuid::now_v7().to_string(),
            group: r.group.clone(),
            environment: r.environment.clone(),
            git_ref,
            state: JobState::Queued,
            requested_by: ctx.audit_actor().to_owned(),
            request_id: ctx.request_id.clone(),
            idempotency_key: key,
            active: Some(environment_id(&r.group, &r.environment)),
            created_at_ms: now,
            updated_at_ms: now,
            zones: env.zones.iter().map(|z| ZoneRun::new(z)).collect(),
            ..JobRecord::default()
        })
    }

    /// Stores the job; `Some(existing)` when its idempotency key won a race. Refused while
    /// another deploy of the environment is live, naming it.
    async fn insert_job(&self, job: &JobRecord) -> Result<Option<JobRecord>> {
        match self.core.db.jobs.insert(&job.id, job).await {
            Ok(_) => Ok(None),
            Err(StoreError::UniqueViolation { index, .. }) if index == IDEMPOTENCY_INDEX => {
                let existing = self.job_by_key(job.idempotency_key.as_deref()).await?;
                existing.map(Some).ok_or_else(|| Error::Internal("idempotent job vanished".into()))
            }
            Err(StoreError::UniqueViolation { index, .. }) if index == ACTIVE_JOB_INDEX => {
                Err(match self.core.live_job(&job.group, &job.environment).await? {
                    Some(live) => Error::FailedPrecondition(format!(
                        "deploy {} of environment `{}` is {:?} (ref {}); wait for it to finish or cancel it",
                        live.id, job.environment, live.state, live.git_ref
                    )),
                    None => Error::Unavailable {
                        service: "deployer",
                        message: "a deploy just finished; try again".into(),
                    },
                })
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Publishes the job's work item (deduplicated by job id and claim) while it is QUEUED; a failed
    /// publish is logged: the sweeper publishes QUEUED jobs that never got a work item.
    pub(crate) async fn publish_work(&self, job: &JobRecord) {
        if job.state != JobState::Queued || job.work_seq != 0 {
            return;
        }
        let work = DeployWork {
            meta: Some(crate::ports::events::meta(&Caller::new(
                job.requested_by.clone(),
                job.request_id.clone(),
            ))),
            job_id: job.id.clone(),
            group: job.group.clone(),
            environment: job.environment.clone(),
            git_ref: job.git_ref.clone(),
        };
        // One message id per claim: a job parked for review and queued again needs a new work
        // item within the stream's duplicate window, and a republished one must not double.
        let options = ramen_bus::PublishOptions::with_msg_id(format!("{}.{}", job.id, job.claim));
        match self.core.bus.publish(&super::work_subject(), &work, options).await {
            Ok(ack) => self.record_work_seq(&job.id, ack.sequence).await,
            Err(err) => {
                tracing::warn!(job = %job.id, error = %err, "work item not published yet; the sweeper retries")
            }
        }
    }

    /// Remembers which work item is the job's current one (unless a claim already did).
    pub(crate) async fn record_work_seq(&self, job_id: &str, sequence: u64) {
        let result = self
            .core
            .db
            .jobs
            .modify(job_id, |job| {
                if job.work_seq == 0 && !job.state.is_terminal() {
                    job.work_seq = sequence;
                }
                Ok::<_, Error>(())
            })
            .await;
        if let Err(err) = result {
            tracing::warn!(job = %job_id, error = %err, "work sequence not recorded");
        }
    }
}
