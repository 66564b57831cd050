//! Group deletion: an idempotent, resumable saga whose progress is stored on the group record
//! (visible through `GetGroupDeletion` until the record itself goes, last). Steps:
//! `placements` (every placement in every zone torn down by the zone-manager), `bucket_prefix`
//! (`groups/<group>/` and the local git mirrors), `auth` (keys, secrets, memberships, rules
//! and the registration: `PurgeGroup`), `records` (environments, jobs, the group).
//! Any replica may run it (on `DeleteGroup`, at start-up, or from the sweeper); every step
//! can run twice.

use std::sync::Arc;
use std::time::Duration;

use ramen_proto::auth::v1::Action;
use ramen_proto::events::v1::GroupDeleted;
use ramen_proto::zone::v1::TeardownState;
use ramen_store::{Filter, Query};

use crate::Registry;
use crate::caller::{Caller, require};
use crate::error::{Error, Result};
use crate::model::{
    Deletion, GroupPhase, SagaPhase, SagaStepRecord, Status, bucket_prefix, now_ms,
};
use crate::validate;

pub const STEPS: [&str; 4] = ["placements", "bucket_prefix", "auth", "records"];

impl Registry {
    /// Starts the saga (or returns the progress of the one running).
    pub async fn delete_group(self: &Arc<Self>, ctx: &Caller, name: &str) -> Result<Deletion> {
        validate::dns_label("name", name)?;
        require(ctx, name, Action::ManageGroup)?;
        let zones: Vec<String> =
            self.core.zones.placements(name).await?.into_iter().map(|p| p.zone).collect();
        let (written, first) = self
            .core
            .db
            .groups
            .modify(name, |g| {
                let first = g.deletion.is_none();
                if first {
                    let now = now_ms();
                    g.status = GroupPhase::Deleting;
                    g.deletion = Some(Deletion {
                        state: SagaPhase::Running,
                        steps: STEPS
                            .iter()
                            .map(|s| SagaStepRecord {
                                name: (*s).to_owned(),
                                updated_at_ms: now,
                                ..Default::default()
                            })
                            .collect(),
                        started_at_ms: now,
                        requested_by: ctx.audit_actor().to_owned(),
                        zones: zones.clone(),
                        ..Deletion::default()
                    });
                }
                Ok::<_, Error>(first)
            })
            .await?;
        if first {
            self.jobs.cancel_group_jobs(ctx, name).await?;
            let event = GroupDeleted {
                meta: Some(crate::ports::events::meta(ctx)),
                group: name.to_owned(),
                bucket_prefix: bucket_prefix(name),
                zones,
            };
            self.core.events.publish(&event).await;
            self.core.audit(ctx, "group.delete", name, &format!("group/{name}"), []).await;
        }
        self.spawn_deletion(name);
        Ok(written.value.deletion.unwrap_or_default())
    }

    /// Progress of a deletion (super admins); NOT_FOUND once the record is gone.
    pub async fn group_deletion(&self, ctx: &Caller, name: &str) -> Result<Deletion> {
        validate::dns_label("name", name)?;
        require(ctx, "", Action::CreateGroup)?;
        let group = self.core.db.groups.get(name).await?;
        group
            .and_then(|g| g.value.deletion)
            .ok_or_else(|| Error::NotFound(format!("deletion of group `{name}`")))
    }

    /// Runs the saga in a named task unless this process runs it already.
    pub(crate) fn spawn_deletion(self: &Arc<Self>, name: &str) {
        if !self.sagas.lock().insert(name.to_owned()) {
            return;
        }
        let deployer = self.clone();
        let group = name.to_owned();
        self.tasks.spawn(format!("group-deletion:{name}"), move |stop| async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = deployer.crashed.cancelled() => {}
                () = deployer.run_deletion(&group) => {}
            }
            deployer.sagas.lock().remove(&group);
        });
    }

    async fn run_deletion(&self, group: &str) {
        let mut backoff = Duration::from_millis(500);
        for step in STEPS {
            loop {
                match self.deletion_step(group, step).await {
                    Ok(()) => break,
                    Err(err) => {
                        tracing::warn!(%group, %step, error = %err, "group deletion step failed; retrying");
                        let message = format!("{step}: {err}");
                        let _ = self
                            .saga_update(
                                group,
                                step,
                                Status::Failed,
                                &message,
                                Some(SagaPhase::Retrying),
                            )
                            .await;
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                    }
                }
            }
        }
    }

    async fn deletion_step(&self, group: &str, step: &str) -> Result<()> {
        let Some(current) = self.core.db.groups.get(group).await? else { return Ok(()) };
        let done = current.value.deletion.as_ref().is_some_and(|d| {
            d.steps.iter().any(|s| s.name == step && s.status == Status::Succeeded)
        });
        if done {
            return Ok(());
        }
        self.saga_update(group, step, Status::Running, "", Some(SagaPhase::Running)).await?;
        let detail = match step {
            "placements" => self.teardown_placements(group).await?,
            "bucket_prefix" => {
                let removed = self.core.blob.delete_prefix(&bucket_prefix(group)).await?;
                self.core
                    .repos
                    .forget_group(group)
                    .map_err(|e| Error::Internal(format!("removing the git mirrors: {e}")))?;
                format!("{removed} objects removed")
            }
            "auth" => {
                let purged = self.core.auth.purge_group(group).await?;
                format!(
                    "{} keys, {} secrets, {} memberships removed",
                    purged.keys_deleted, purged.secrets_deleted, purged.memberships_deleted
                )
            }
            _ => return self.delete_group_records(group).await,
        };
        self.saga_update(group, step, Status::Succeeded, &detail, None).await
    }

    /// Waits for the group's jobs to stop, then for every placement's teardown.
    async fn teardown_placements(&self, group: &str) -> Result<String> {
        loop {
            let live = self
                .core
                .db
                .jobs
                .find(&Query::new().eq("group", group).exists("active", true))
                .await?;
            let Some(job) = live.first() else { break };
            let detail = format!("waiting for deploy {} to stop", job.id);
            self.saga_update(group, "placements", Status::Running, &detail, None).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let started = self.core.zones.teardown(group, "").await?;
        let total = started.len();
        loop {
            let progress = self.core.zones.teardown_progress(group, "").await?;
            let open: Vec<String> = progress
                .iter()
                .filter(|p| p.state != TeardownState::Done as i32)
                .map(|p| {
                    let step = p.steps.iter().find(|s| {
                        s.status != ramen_proto::common::v1::StepStatus::Succeeded as i32
                    });
                    format!("{}: {}", p.zone, step.map_or("finishing", |s| s.name.as_str()))
                })
                .collect();
            let remaining = self.core.zones.placements(group).await?.len();
            if open.is_empty() && remaining == 0 {
                return Ok(format!("{total} placements torn down"));
            }
            let detail = format!(
                "{}/{total} placements torn down; {}",
                total.saturating_sub(open.len()),
                open.join(", ")
            );
            self.saga_update(group, "placements", Status::Running, &detail, None).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn delete_group_records(&self, group: &str) -> Result<()> {
        let in_group = Filter::new().eq("group", group);
        self.core.db.jobs.delete_many(&in_group).await?;
        self.core.db.environments.delete_many(&in_group).await?;
        self.saga_update(group, "records", Status::Succeeded, "", Some(SagaPhase::Done)).await?;
        self.core.db.groups.delete(group, None).await?;
        tracing::info!(%group, "group deleted");
        Ok(())
    }

    async fn saga_update(
        &self,
        group: &str,
        step: &str,
        status: Status,
        detail: &str,
        state: Option<SagaPhase>,
    ) -> Result<()> {
        self.core
            .db
            .groups
            .modify(group, |g| {
                let Some(d) = g.deletion.as_mut() else { return Ok(()) };
                let now = now_ms();
                if let Some(s) = d.steps.iter_mut().find(|s| s.name == step) {
                    s.status = status;
                    s.detail = detail.to_owned();
                    s.updated_at_ms = now;
                }
                if let Some(state) = state {
                    d.state = state;
                    d.error = if state == SagaPhase::Retrying {
                        detail.to_owned()
                    } else {
                        String::new()
                    };
                    if state == SagaPhase::Done {
                        d.finished_at_ms = now;
                    }
                }
                Ok::<_, Error>(())
            })
            .await?;
        Ok(())
    }

    /// Resumes the sagas of groups left deleting (a restart, another replica that died).
    pub(crate) async fn resume_deletions(self: &Arc<Self>) -> Result<()> {
        let deleting = self.core.db.groups.find(&Query::new().eq("status", "deleting")).await?;
        for group in deleting {
            self.spawn_deletion(&group.id);
        }
        Ok(())
    }
}
