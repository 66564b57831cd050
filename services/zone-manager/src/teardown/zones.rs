//! Zone deletion (the record goes after its last placement), recovery at start-up, and the
//! retention of finished teardowns.

use std::sync::Arc;
use std::time::Duration;

use ramen_store::{Filter, Query};

use super::TeardownPhase;
use crate::error::Result;
use crate::manager::ZoneManager;
use crate::model::{PlacementPhase, now_ms};
use crate::store::group_zone;

const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

impl ZoneManager {
    /// Deletes a zone marked for deletion once nothing of it is left, publishing `ZoneDeleted`
    /// first (so a failed publish leaves the record to try again). True when it was deleted.
    pub(crate) async fn finish_zone_deletion(&self, zone: &str) -> Result<bool> {
        let Some(record) = self.db.zones.get(zone).await? else { return Ok(false) };
        if !record.value.deleting {
            return Ok(false);
        }
        let placements = self.db.placements.count(&group_zone("", zone)).await?;
        let unfinished = self
            .db
            .teardowns
            .count(&group_zone("", zone).ne("state", serde_json::json!(TeardownPhase::Done)))
            .await?;
        if placements > 0 || unfinished > 0 {
            return Ok(false);
        }
        self.db.packages.delete_many(&group_zone("", zone)).await?;
        self.events.zone_deleted(&record.value).await?;
        self.db.zones.delete(zone, None).await?;
        tracing::info!(zone, "zone deleted");
        Ok(true)
    }

    /// Start-up: resumes unfinished teardowns and zone deletions, brings back the workers of
    /// every other placement (their records say how many), and forgets worker records of
    /// processes that did not survive the restart.
    pub async fn recover(self: &Arc<Self>) -> Result<()> {
        let teardowns = self.db.teardowns.find(&Query::new()).await?;
        for teardown in teardowns.into_iter().map(|t| t.value) {
            if teardown.state != TeardownPhase::Done {
                self.spawn_saga(&teardown.id());
            }
        }
        let deleting =
            self.db.zones.find(&Query::new().filter(Filter::new().eq("deleting", true))).await?;
        for zone in deleting.into_iter().map(|z| z.value) {
            let placements =
                self.db.placements.find(&Query::new().filter(group_zone("", &zone.name))).await?;
            for placement in placements {
                self.start_teardown(
                    &crate::events::own_caller(),
                    &placement.value.group,
                    &zone.name,
                )
                .await?;
            }
            self.finish_zone_deletion(&zone.name).await?;
        }
        let placements = self.db.placements.find(&Query::new()).await?;
        for placement in placements.into_iter().map(|p| p.value) {
            if placement.status == PlacementPhase::TearingDown {
                continue;
            }
            let Ok(provider) = self.provider_for(&placement) else { continue };
            self.db.workers.delete_many(&group_zone(&placement.group, &placement.zone)).await?;
            if let Err(err) = provider.resume(&placement).await {
                tracing::error!(placement = %placement.label(), %err, "cannot bring the workers back");
            }
        }
        Ok(())
    }

    /// A task (`zone-teardown-retention`) that forgets finished teardowns after the retention
    /// and retries zone deletions whose last step could not run.
    pub(crate) fn spawn_retention(self: &Arc<Self>) {
        let manager = self.clone();
        self.tasks.spawn("zone-teardown-retention", move |token| async move {
            loop {
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep(SWEEP_INTERVAL) => {}
                }
                if let Err(err) = manager.sweep().await {
                    tracing::warn!(%err, "teardown retention sweep failed");
                }
            }
        });
    }

    async fn sweep(&self) -> Result<()> {
        let cutoff = now_ms() - self.settings.teardown_retention.as_millis() as i64;
        let finished = Filter::new()
            .eq("state", serde_json::json!(TeardownPhase::Done))
            .lt("finished_at_ms", cutoff);
        self.db.teardowns.delete_many(&finished).await?;
        let deleting =
            self.db.zones.find(&Query::new().filter(Filter::new().eq("deleting", true))).await?;
        for zone in deleting {
            self.finish_zone_deletion(&zone.value.name).await?;
        }
        Ok(())
    }
}
