//! Load reports: every interval the node publishes its in-flight count, cap and readiness on
//! `ramen.load.v1.node.<group>.<zone>` (core NATS: frequent, small, nothing to persist), as
//! the NATS user the zone-manager minted for its placement, which may publish there and
//! nowhere else. The rebalancer turns them into load cells; `/status` shows the same numbers.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ramen_bus::auth::{node_load_subject, parse_node_load_subject};
use ramen_bus::{PublishOptions, Schema, Subject};
use ramen_proto::common::v1::Track;
use ramen_proto::event::Event;
use ramen_proto::events::v1::{EventMeta, NodeLoadReport};
use tokio_util::sync::CancellationToken;

use crate::node::Node;
use crate::node_bus::NodeBus;

/// The subject this node reports on.
pub fn subject(node: &Node) -> Subject<NodeLoadReport> {
    let name = node_load_subject(&node.identity.group, &node.identity.zone);
    Subject::new(name, Schema::new(NodeLoadReport::NAME, 1))
}

pub fn report(node: &Node) -> NodeLoadReport {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    let track =
        if node.identity.track == "worker-canary" { Track::WorkerCanary } else { Track::Worker };
    NodeLoadReport {
        meta: Some(EventMeta {
            event_id: uuid::Uuid::now_v7().to_string(),
            at_unix_ms: now,
            actor: "runner".into(),
            request_id: String::new(),
        }),
        node_id: node.identity.node_id.clone(),
        group: node.identity.group.clone(),
        zone: node.identity.zone.clone(),
        track: track as i32,
        in_flight: node.in_flight() as u32,
        cap: node.settings.in_flight_cap as u32,
        ready: node.is_ready(),
        loaded_commit: node.loaded_commit(),
        at_unix_ms: now,
        draining: node.is_draining(),
        runtime_restarts: node.metrics.runtime_restarts.get() as u32,
    }
}

/// Publishes a report every `interval` until cancelled. A bus outage skips reports (the
/// rebalancer then sees the node as `down` after a few intervals, which is the truth).
pub async fn run(node: Arc<Node>, bus: NodeBus, interval: Duration, token: CancellationToken) {
    let subject = subject(&node);
    if parse_node_load_subject(subject.name()).is_none() {
        tracing::warn!(group = %node.identity.group, zone = %node.identity.zone,
            "no load reports: a node outside a placement (group and zone must be set) has no subject to report on");
        return;
    }
    let Some(bus) = bus.get("load reports", interval, &token).await else { return };
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = token.cancelled() => {
                // A last report, so the rebalancer sees the drain without waiting.
                let _ = bus.publish_core(&subject, &report(&node), PublishOptions::default()).await;
                return;
            }
            _ = tick.tick() => {
                if let Err(err) = bus.publish_core(&subject, &report(&node), PublishOptions::default()).await {
                    tracing::debug!(%err, "load report not published");
                }
            }
        }
    }
}
