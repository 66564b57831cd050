//! Worker reports from the providers → `zone_workers` records, `WorkerChanged` events, and the
//! placement's status (degraded while a worker is down, ready when all are back).

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::error::Result;
use crate::manager::ZoneManager;
use crate::model::{PlacementPhase, WorkerPhase, WorkerRecord, now_ms};
use crate::provider::{WorkerEvent, WorkerView};

/// The named task (`zone-worker-events`) draining the providers' worker reports.
pub fn spawn_worker_events(manager: &Arc<ZoneManager>, mut events: UnboundedReceiver<WorkerEvent>) {
    let manager = manager.clone();
    manager.clone().tasks.spawn("zone-worker-events", move |token| async move {
        loop {
            let event = tokio::select! {
                _ = token.cancelled() => return,
                event = events.recv() => match event {
                    Some(event) => event,
                    None => return,
                },
            };
            if let Err(err) = manager.on_worker_event(event).await {
                tracing::warn!(%err, "recording a worker change failed");
            }
        }
    });
}

impl ZoneManager {
    async fn on_worker_event(&self, event: WorkerEvent) -> Result<()> {
        match event {
            WorkerEvent::Changed { group, zone, worker } => {
                self.events.worker(&group, &zone, &worker).await;
                let Some(placement) = self.find_placement(&group, &zone).await? else {
                    return Ok(());
                };
                // A placement being torn down keeps no worker records (its last step deletes
                // them; a late report must not bring one back).
                if placement.value.status == PlacementPhase::TearingDown {
                    return Ok(());
                }
                let record = worker_record(&group, &zone, &worker);
                self.db.workers.put(&record.record_id(), &record).await?;
                self.follow_health(&group, &zone, &worker).await
            }
            WorkerEvent::Removed { group, zone, id, track } => {
                self.events.worker(&group, &zone, &super::publish::gone(&id, track)).await;
                self.db.workers.delete(&format!("{group}/{zone}/{id}"), None).await?;
                Ok(())
            }
        }
    }

    /// A worker that exits degrades the placement; it is ready again once every worker is.
    async fn follow_health(&self, group: &str, zone: &str, worker: &WorkerView) -> Result<()> {
        let placement = self.placement(group, zone).await?;
        match worker.state {
            WorkerPhase::Exited => {
                let message = format!("{} {}", worker.id, worker.reason);
                self.set_status(group, zone, PlacementPhase::Degraded, message).await?;
            }
            WorkerPhase::Ready if placement.status == PlacementPhase::Degraded => {
                let workers = self.provider_for(&placement)?.workers(&placement).await?;
                if workers.iter().all(WorkerView::is_ready) {
                    self.set_status(group, zone, PlacementPhase::Ready, String::new()).await?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn worker_record(group: &str, zone: &str, worker: &WorkerView) -> WorkerRecord {
    WorkerRecord {
        group: group.to_owned(),
        zone: zone.to_owned(),
        id: worker.id.clone(),
        track: worker.track,
        state: worker.state,
        reason: worker.reason.clone(),
        mcp_address: worker.mcp_address.clone(),
        admin_address: worker.admin_address.clone(),
        grpc_address: worker.grpc_address.clone(),
        loaded_commit: worker.loaded_commit.clone(),
        restarts: worker.restarts,
        started_at_ms: worker.started_at_ms,
        pid: worker.pid,
        exit_code: worker.exit_code,
        last_log_lines: worker.last_log_lines.clone(),
        limits: worker.limits.clone(),
        updated_at_ms: now_ms(),
    }
}
