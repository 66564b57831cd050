//! Running a teardown's steps, recording each one's progress.

use std::sync::Arc;
use std::time::Duration;

use ramen_proto::events::v1::PlacementChange;

use super::{StepPhase, TeardownPhase, TeardownRecord};
use crate::error::{Error, Result};
use crate::manager::ZoneManager;
use crate::model::now_ms;
use crate::provider::{StepOutcome, TeardownAction, TeardownTarget};
use crate::store::group_zone;

const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

impl ZoneManager {
    /// Runs the saga in a named task (`zone-teardown:<group>/<zone>`) until it is done, trying
    /// a failed or waiting step again with back-off. One task per teardown in this process.
    pub(crate) fn spawn_saga(self: &Arc<Self>, id: &str) {
        if !self.running_teardowns.lock().insert(id.to_owned()) {
            return;
        }
        let (manager, id) = (self.clone(), id.to_owned());
        self.tasks.spawn(format!("zone-teardown:{id}"), move |token| async move {
            let mut delay = Duration::from_millis(500);
            loop {
                let outcome = tokio::select! {
                    _ = token.cancelled() => break,
                    outcome = manager.run_teardown(&id, None) => outcome,
                };
                match outcome {
                    Ok(record) if record.state == TeardownPhase::Done => break,
                    Ok(record) => tracing::info!(teardown = %id, step = ?record.next_step(), "teardown waiting"),
                    Err(err) => tracing::warn!(teardown = %id, %err, "teardown step failed; retrying"),
                }
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(MAX_RETRY_DELAY);
            }
            manager.running_teardowns.lock().remove(&id);
        });
    }

    /// Runs the remaining steps in order and returns the stored progress. `stop_after` ends the
    /// run right after that step, as a crash there would (tests and operators use it to check
    /// that a re-run finishes the job).
    pub async fn run_teardown(&self, id: &str, stop_after: Option<&str>) -> Result<TeardownRecord> {
        loop {
            let record = self.teardown_record(id).await?;
            if record.state == TeardownPhase::Done {
                return Ok(record);
            }
            let Some(step) = record.next_step().map(str::to_owned) else {
                let done = self.finish_teardown(id).await?;
                self.finish_zone_deletion(&done.zone).await?;
                return Ok(done);
            };
            self.mark_step(id, &step, StepPhase::Running, String::new(), None).await?;
            match self.run_step(&record, &step).await {
                Ok(StepOutcome::Done(detail)) => {
                    self.mark_step(id, &step, StepPhase::Succeeded, detail, None).await?;
                }
                Ok(StepOutcome::Waiting(detail)) => {
                    return self.mark_step(id, &step, StepPhase::Running, detail, None).await;
                }
                Err(err) => {
                    self.mark_step(
                        id,
                        &step,
                        StepPhase::Failed,
                        err.to_string(),
                        Some(TeardownPhase::Retrying),
                    )
                    .await?;
                    return Err(err);
                }
            }
            if stop_after == Some(step.as_str()) {
                return self.teardown_record(id).await;
            }
        }
    }

    async fn teardown_record(&self, id: &str) -> Result<TeardownRecord> {
        self.db
            .teardowns
            .get(id)
            .await?
            .map(|t| t.value)
            .ok_or_else(|| Error::NotFound(format!("teardown of {id}")))
    }

    /// A record written before teardowns kept the region reads it from the zone.
    async fn teardown_target(&self, record: &TeardownRecord) -> TeardownTarget {
        let region = match record.region.is_empty() {
            false => record.region.clone(),
            true => self.zone(&record.zone).await.map(|z| z.region).unwrap_or_default(),
        };
        TeardownTarget {
            group: record.group.clone(),
            zone: record.zone.clone(),
            region,
            edge_members: Vec::new(),
        }
    }

    async fn run_step(&self, record: &TeardownRecord, step: &str) -> Result<StepOutcome> {
        let provider = self.providers.get(record.provider, &record.zone)?;
        let mut target = self.teardown_target(record).await;
        let action = match step {
            "drain_workers" => {
                // Waits for a rollout in progress on the placement to end first.
                let lock = self.lock(&record.id());
                let _guard = lock.lock().await;
                return Ok(provider.teardown(&target, TeardownAction::DrainWorkers).await?);
            }
            "remove_route" => {
                self.clear_edge_weights(&record.id()).await?;
                TeardownAction::RemoveRoute
            }
            "remove_edge_rule" => {
                // A failure to read the group's other placements fails the step: computed from
                // nothing, the group's edge rule would be removed for zones that still use it.
                target.edge_members =
                    self.edge_members(&record.group, record.provider, Some(&record.zone)).await?;
                TeardownAction::RemoveEdgeRule
            }
            "remove_identity" => TeardownAction::RemoveIdentity,
            "remove_namespace" => TeardownAction::RemoveNamespace,
            "delete_records" => return self.delete_records(record).await,
            other => {
                return Err(Error::FailedPrecondition(format!("unknown teardown step `{other}`")));
            }
        };
        Ok(provider.teardown(&target, action).await?)
    }

    async fn clear_edge_weights(&self, id: &str) -> Result<()> {
        let cleared = self
            .db
            .placements
            .modify(id, |p| {
                p.edge_weights.clear();
                p.revision += 1;
                Ok::<_, Error>(())
            })
            .await;
        match cleared {
            Ok(_) | Err(Error::Store(ramen_store::StoreError::NotFound { .. })) => Ok(()),
            Err(err) => Err(err),
        }
    }

    async fn delete_records(&self, record: &TeardownRecord) -> Result<StepOutcome> {
        let id = record.id();
        let last = self.find_placement(&record.group, &record.zone).await?;
        let workers = self.db.workers.delete_many(&group_zone(&record.group, &record.zone)).await?;
        let packages = self.db.packages.delete(&id, None).await?;
        let placement = self.db.placements.delete(&id, None).await?;
        if let Some(last) = last {
            self.events
                .placement(&last.value, PlacementChange::Deleted, &crate::events::own_caller())
                .await;
        }
        Ok(StepOutcome::Done(format!(
            "deleted {} placement, {workers} worker and {} package record(s)",
            u8::from(placement),
            u8::from(packages)
        )))
    }

    async fn mark_step(
        &self,
        id: &str,
        step: &str,
        status: StepPhase,
        detail: String,
        state: Option<TeardownPhase>,
    ) -> Result<TeardownRecord> {
        let (written, ()) = self
            .db
            .teardowns
            .modify(id, |t| {
                if let Some(entry) = t.steps.iter_mut().find(|s| s.name == step) {
                    entry.status = status;
                    entry.detail = detail.clone();
                    entry.updated_at_ms = now_ms();
                }
                match state {
                    Some(TeardownPhase::Retrying) => {
                        t.state = TeardownPhase::Retrying;
                        t.error = format!("{step}: {detail}");
                        t.attempts += 1;
                    }
                    _ => t.state = TeardownPhase::Running,
                }
                Ok::<_, Error>(())
            })
            .await?;
        Ok(written.value)
    }

    async fn finish_teardown(&self, id: &str) -> Result<TeardownRecord> {
        let (written, ()) = self
            .db
            .teardowns
            .modify(id, |t| {
                t.state = TeardownPhase::Done;
                t.error.clear();
                t.finished_at_ms = now_ms();
                Ok::<_, Error>(())
            })
            .await?;
        tracing::info!(teardown = %id, "teardown done");
        Ok(written.value)
    }
}
