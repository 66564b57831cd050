//! Draining on SIGTERM (or the admin `Drain` call): readiness fails at once and no new
//! sessions start; `complete` lets in-flight calls finish up to the timeout, `interrupt`
//! cancels them at once (the runtime is told; clients get a JSON-RPC error).

use std::sync::Arc;
use std::time::Duration;

use ramen_config::DrainMode;
use ramen_lifecycle::Health;

use crate::node::Node;

/// Time cancelled calls get to deliver their error to clients.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

pub async fn drain(node: &Arc<Node>, health: &Health, mode: DrainMode, timeout: Duration) {
    node.start_draining();
    health.set_draining();
    tracing::info!(?mode, in_flight = node.in_flight(), "draining");
    if mode == DrainMode::Complete && !wait_idle(node, timeout).await {
        tracing::warn!(
            in_flight = node.in_flight(),
            ?timeout,
            "drain timeout: cancelling the calls still running"
        );
    }
    node.runtime.cancel_all();
    wait_idle(node, CANCEL_GRACE).await;
}

async fn wait_idle(node: &Node, timeout: Duration) -> bool {
    ramen_lifecycle::poll_until(timeout, || node.in_flight() == 0).await
}
