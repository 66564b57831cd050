//! Events the scheduler and kubelet would record about a pod (FailedScheduling, Failed
//! pulls, BackOff), once per pod and reason, so a provider can read why a pod is stuck.

use serde_json::{Value, json};

use crate::resources;
use crate::store::{Store, meta};

/// The kubelet's `BackOff` warning for a container that keeps exiting.
pub(crate) fn back_off(store: &Store, pod: &Value) {
    record(store, pod, "Warning", "BackOff", "Back-off restarting failed container", "kubelet");
}

pub(crate) fn record(
    store: &Store,
    pod: &Value,
    kind: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    let ns = meta::namespace(pod);
    let name = format!(
        "{}.{}{}",
        meta::name(pod),
        reason.to_ascii_lowercase(),
        meta::uid(pod).get(..8).unwrap_or_default()
    );
    if store.get(resources::events(), ns, &name).is_some() {
        return;
    }
    let now = meta::now();
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {
            "apiVersion": "v1", "kind": "Pod", "name": meta::name(pod), "namespace": ns,
            "uid": meta::uid(pod), "resourceVersion": meta::resource_version(pod),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    });
    // The namespace may be terminating; a lost event is fine.
    let _ = store.create(resources::events(), ns, event);
}
