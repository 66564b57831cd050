//! The ingest task: files every load report as it arrives.

use std::sync::Arc;

use ramen_bus::{Bus, BusError};
use ramen_lifecycle::TaskCenter;
use ramen_proto::events::v1::NodeLoadReport;

use super::LoadCells;

/// Subscribes now (so no report sent after start is missed) and files reports in the task
/// `rebalancer-load-ingest` until shutdown.
pub async fn spawn_ingest(
    cells: &Arc<LoadCells>,
    bus: &Bus,
    tasks: &TaskCenter,
) -> Result<(), BusError> {
    let mut subscription = bus.subscribe(&ramen_service::subject::<NodeLoadReport>()).await?;
    let cells = cells.clone();
    tasks.spawn("rebalancer-load-ingest", move |stop| async move {
        // One cancellation future for the task's life, not one per report.
        let stopped = stop.cancelled();
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = &mut stopped => return,
                message = subscription.next() => match message {
                    Some(message) => {
                        cells.ingest(&message.payload);
                        cells.metrics.reports.inc();
                    }
                    None => {
                        tracing::warn!("load report subscription closed");
                        return;
                    }
                },
            }
        }
    });
    Ok(())
}
