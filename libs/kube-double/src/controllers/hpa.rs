//! The HPA controller of a cluster without metrics: it keeps the target Deployment's
//! `spec.replicas` within `[minReplicas, maxReplicas]` and reports that in the HPA status.
//! Metrics are never evaluated (no metrics server), so nothing scales on load.

use serde_json::{Value, json};

use super::{Cluster, condition};
use crate::resources::{self, deployments};
use crate::store::meta;

pub(crate) fn reconcile_all(cluster: &Cluster) {
    let rt = resources::by_path("autoscaling", "v2", "horizontalpodautoscalers").expect("served");
    let (all, _) = cluster.store.list(rt, None);
    for hpa in all.iter().filter(|h| !meta::is_terminating(h)) {
        let status = reconcile(cluster, hpa);
        if hpa.get("status") != Some(&status) {
            let _ = cluster
                .store
                .mutate(rt, meta::namespace(hpa), meta::name(hpa), |o| o["status"] = status);
        }
    }
}

fn reconcile(cluster: &Cluster, hpa: &Value) -> Value {
    let ns = meta::namespace(hpa);
    let old = hpa.pointer("/status/conditions");
    let target_kind =
        hpa.pointer("/spec/scaleTargetRef/kind").and_then(Value::as_str).unwrap_or_default();
    let target =
        hpa.pointer("/spec/scaleTargetRef/name").and_then(Value::as_str).unwrap_or_default();
    let generation = hpa.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
    let deployment = (target_kind == "Deployment")
        .then(|| cluster.store.get(deployments(), ns, target))
        .flatten();
    let Some(deployment) = deployment else {
        let message = format!(
            "the HPA controller was unable to get the target's current scale: deployments/scale.apps \"{target}\" not found"
        );
        return json!({
            "observedGeneration": generation,
            "desiredReplicas": 0,
            "conditions": [condition(old, "AbleToScale", false, "FailedGetScale", &message)],
        });
    };
    let current = deployment.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let min = hpa.pointer("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1);
    let max = hpa.pointer("/spec/maxReplicas").and_then(Value::as_i64).unwrap_or(min).max(min);
    let desired = current.clamp(min, max);
    let mut last_scale = hpa.pointer("/status/lastScaleTime").cloned();
    if desired != current {
        let _ = cluster
            .store
            .mutate(deployments(), ns, target, |d| d["spec"]["replicas"] = json!(desired));
        last_scale = Some(json!(meta::now()));
    }
    let limited = match current {
        c if c < min => condition(
            old,
            "ScalingLimited",
            true,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        ),
        c if c > max => condition(
            old,
            "ScalingLimited",
            true,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        ),
        _ => condition(
            old,
            "ScalingLimited",
            false,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        ),
    };
    let mut status = json!({
        "observedGeneration": generation,
        "currentReplicas": deployment.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
        "desiredReplicas": desired,
        "conditions": [
            condition(old, "AbleToScale", true, "ReadyForNewScale", "recommended size matches current size"),
            condition(old, "ScalingActive", false, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: no metrics are served by the kube double"),
            limited,
        ],
    });
    if let Some(time) = last_scale {
        status["lastScaleTime"] = time;
    }
    status
}
