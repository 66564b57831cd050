//! The simulated control plane: the deployment controller (with its ReplicaSets), the
//! scheduler and kubelet for simulated pods, and the HPA controller. Each runs as a named
//! task of the double's `TaskCenter`, reconciling on every store change and on a short
//! tick (for time-driven transitions such as a readiness delay or a progress deadline).

pub mod deployment;
pub mod events;
pub mod hpa;
pub mod pods;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::behaviour::Behaviours;
use crate::logs::Logs;
use crate::store::Store;

/// How often controllers look again without a change (time-driven transitions).
const TICK: Duration = Duration::from_millis(100);

/// What every controller works on.
pub(crate) struct Cluster {
    pub store: Arc<Store>,
    pub logs: Arc<Logs>,
    pub behaviours: Mutex<Behaviours>,
    pub ips: PodIps,
}

/// Pod IPs `127.1.x.y`, distinct per pod: any 127/8 address is local on Linux, so a pod's
/// process could bind there without setup.
#[derive(Debug, Default)]
pub(crate) struct PodIps(Mutex<u32>);

impl PodIps {
    pub fn next(&self) -> String {
        let mut n = self.0.lock();
        loop {
            *n += 1;
            let (x, y) = ((*n / 256) % 256, *n % 256);
            if y != 0 && y != 255 {
                return format!("127.1.{x}.{y}");
            }
        }
    }
}

/// Runs `reconcile` after every store change (coalesced) and every [`TICK`], until
/// cancelled.
pub(crate) async fn run_loop<F, Fut>(
    cluster: Arc<Cluster>,
    token: CancellationToken,
    mut reconcile: F,
) where
    F: FnMut(Arc<Cluster>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut changes = cluster.store.subscribe();
    loop {
        reconcile(cluster.clone()).await;
        tokio::select! {
            _ = token.cancelled() => return,
            _ = changes.recv() => {
                // Coalesce a burst of changes into one pass.
                while changes.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// A condition with `lastTransitionTime` kept while its status is unchanged.
pub(crate) fn condition(
    old: Option<&serde_json::Value>,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
) -> serde_json::Value {
    let status = if status { "True" } else { "False" };
    let previous = old
        .and_then(serde_json::Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind));
    let since = match previous {
        Some(p) if p["status"] == status => p["lastTransitionTime"].clone(),
        _ => serde_json::json!(crate::store::meta::now()),
    };
    let mut c = serde_json::json!({"type": kind, "status": status, "lastTransitionTime": since});
    if !reason.is_empty() {
        c["reason"] = serde_json::json!(reason);
        c["message"] = serde_json::json!(message);
    }
    c
}
