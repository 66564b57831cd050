//! The ingest task: files every load report as it arrives. A node publishes on
//! `ramen.load.v1.node.<group>.<zone>`, the one subject its NATS user may publish to, so the
//! subject is what the bus vouches for: a report whose payload names another placement is
//! dropped (a node's code trying to skew another group's weights, or a broken node).

use std::sync::Arc;

use ramen_bus::auth::{NODE_LOAD_FILTER, parse_node_load_subject};
use ramen_bus::{Bus, BusError, Schema, Subject};
use ramen_lifecycle::TaskCenter;
use ramen_proto::event::Event;
use ramen_proto::events::v1::NodeLoadReport;

use super::LoadCells;

/// Every node's load reports.
pub fn load_subject() -> Subject<NodeLoadReport> {
    Subject::new(NODE_LOAD_FILTER, Schema::new(NodeLoadReport::NAME, 1))
}

/// Whether a report may be filed: its payload names the placement its subject names.
pub fn vouched_for(subject: &str, report: &NodeLoadReport) -> bool {
    parse_node_load_subject(subject)
        .is_some_and(|(group, zone)| group == report.group && zone == report.zone)
}

/// Subscribes now (so no report sent after start is missed) and files reports in the task
/// `rebalancer-load-ingest` until shutdown.
pub async fn spawn_ingest(
    cells: &Arc<LoadCells>,
    bus: &Bus,
    tasks: &TaskCenter,
) -> Result<(), BusError> {
    let mut subscription = bus.subscribe(&load_subject()).await?;
    let cells = cells.clone();
    tasks.spawn("rebalancer-load-ingest", move |stop| async move {
        // One cancellation future for the task's life, not one per report.
        let stopped = stop.cancelled();
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = &mut stopped => return,
                message = subscription.next() => match message {
                    Some(message) if vouched_for(&message.subject, &message.payload) => {
                        cells.ingest(&message.payload);
                        cells.metrics.reports.inc();
                    }
                    Some(message) => {
                        cells.metrics.dropped.inc();
                        tracing::warn!(
                            subject = %message.subject,
                            group = %message.payload.group,
                            zone = %message.payload.zone,
                            node = %message.payload.node_id,
                            "dropping a load report whose payload names another placement than its subject"
                        );
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
