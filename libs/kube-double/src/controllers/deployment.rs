//! The deployment controller, ReplicaSets included: one ReplicaSet per pod template
//! (`<name>-<pod-template-hash>`), pods `<replicaset>-<5 chars>` owned by it, rolled one at a
//! time when the template changes, scaled to `spec.replicas`, and the Deployment's status
//! (replica counts, `Available` and `Progressing` with `ProgressDeadlineExceeded`).
//!
//! Simplifications: a rolling update surges by one pod and keeps every ready old pod until
//! a new one is ready (maxSurge 1, maxUnavailable 0 in effect, whatever the spec says; the
//! spec's maxUnavailable only decides `Available`); `Recreate` deletes the old pods first;
//! `minReadySeconds` and `paused` are ignored; old ReplicaSets are kept at zero replicas.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Cluster, condition};
use crate::resources::{self, deployments, pods, replicasets};
use crate::store::{DeleteOptions, meta};

/// Progress seen per Deployment uid: what was counted, and when it last moved.
#[derive(Default)]
pub(crate) struct Progress(HashMap<String, (Value, Instant)>);

pub(crate) fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn owned_by<'a>(items: &'a [Value], uid: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    items.iter().filter(move |o| meta::owner_uids(o).iter().any(|u| u == uid))
}

fn template_hash(template: &Value) -> String {
    meta::safe_encode(meta::fnv32a(template.to_string().as_bytes()))
}

pub(crate) fn reconcile_all(cluster: &Cluster, progress: &mut Progress) {
    let (all, _) = cluster.store.list(deployments(), None);
    let (all_rs, _) = cluster.store.list(replicasets(), None);
    let (all_pods, _) = cluster.store.list(pods(), None);
    for d in all.iter().filter(|d| !meta::is_terminating(d)) {
        reconcile(cluster, progress, d, &all_rs, &all_pods);
    }
    progress.0.retain(|uid, _| all.iter().any(|d| meta::uid(d) == uid));
}

fn reconcile(
    cluster: &Cluster,
    progress: &mut Progress,
    d: &Value,
    all_rs: &[Value],
    all_pods: &[Value],
) {
    let ns = meta::namespace(d);
    let replicas = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1).max(0) as usize;
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template);
    let rs_name = format!("{}-{hash}", meta::name(d));
    let owned: Vec<&Value> = owned_by(all_rs, meta::uid(d)).collect();
    let new_rs = match owned.iter().find(|rs| meta::name(rs) == rs_name) {
        Some(rs) => (*rs).clone(),
        None => match create_replicaset(cluster, d, &template, &hash, &rs_name, owned.len()) {
            Some(rs) => rs,
            None => return,
        },
    };
    let live = |rs: &Value| -> Vec<Value> {
        owned_by(all_pods, meta::uid(rs)).filter(|p| !meta::is_terminating(p)).cloned().collect()
    };
    let new_pods = live(&new_rs);
    let old_pods: Vec<Value> =
        owned.iter().filter(|rs| meta::name(rs) != rs_name).flat_map(|rs| live(rs)).collect();
    let recreate = d.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
    roll(cluster, &new_rs, &template, &hash, replicas, &new_pods, &old_pods, recreate);
    for rs in &owned {
        let pods = live(rs);
        let want = if meta::name(rs) == rs_name { replicas } else { pods.len() };
        write_rs_status(cluster, rs, want, &pods);
    }
    write_status(cluster, progress, d, &rs_name, replicas, &new_pods, &old_pods);
    let _ = ns;
}

fn create_replicaset(
    cluster: &Cluster,
    d: &Value,
    template: &Value,
    hash: &str,
    rs_name: &str,
    revision: usize,
) -> Option<Value> {
    let mut template = template.clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    let rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs_name,
            "labels": template["metadata"]["labels"],
            "annotations": {"deployment.kubernetes.io/revision": (revision + 1).to_string()},
            "ownerReferences": [owner_ref("Deployment", d)],
        },
        "spec": {"replicas": 0, "selector": selector, "template": template},
    });
    cluster.store.create(replicasets(), meta::namespace(d), rs).ok()
}

fn owner_ref(kind: &str, owner: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": kind, "name": meta::name(owner), "uid": meta::uid(owner),
        "controller": true, "blockOwnerDeletion": true,
    })
}

#[allow(clippy::too_many_arguments)]
fn roll(
    cluster: &Cluster,
    rs: &Value,
    template: &Value,
    hash: &str,
    replicas: usize,
    new_pods: &[Value],
    old_pods: &[Value],
    recreate: bool,
) {
    let ns = meta::namespace(rs);
    let delete = |pod: &Value| {
        let _ = cluster.store.delete(pods(), ns, meta::name(pod), &DeleteOptions::default());
    };
    if recreate && !old_pods.is_empty() {
        old_pods.iter().for_each(delete);
        return;
    }
    if new_pods.len() > replicas {
        let mut extra: Vec<&Value> = new_pods.iter().collect();
        extra.sort_by_key(|p| pod_ready(p));
        extra.iter().take(new_pods.len() - replicas).for_each(|p| delete(p));
        return;
    }
    let missing = replicas - new_pods.len();
    let room = if old_pods.is_empty() {
        missing
    } else {
        (replicas + 1).saturating_sub(new_pods.len() + old_pods.len()).min(missing)
    };
    for _ in 0..room {
        create_pod(cluster, rs, template, hash);
    }
    let ready_new = new_pods.iter().filter(|p| pod_ready(p)).count();
    let ready_old = old_pods.iter().filter(|p| pod_ready(p)).count();
    if let Some(unready) = old_pods.iter().find(|p| !pod_ready(p)) {
        delete(unready);
    } else if let Some(old) = old_pods.first()
        && ready_new + ready_old > replicas
    {
        delete(old);
    }
}

fn create_pod(cluster: &Cluster, rs: &Value, template: &Value, hash: &str) {
    let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    labels["pod-template-hash"] = json!(hash);
    let mut metadata = json!({
        "name": format!("{}-{}", meta::name(rs), meta::random_suffix(5)),
        "labels": labels,
        "ownerReferences": [owner_ref("ReplicaSet", rs)],
    });
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    });
    if let Err(err) = cluster.store.create(pods(), meta::namespace(rs), pod) {
        tracing::debug!(%err, "the deployment controller could not create a pod");
    }
}

/// Counts as the apiserver serialises them: zero counts are omitted.
fn counts(fields: &[(&str, usize)]) -> serde_json::Map<String, Value> {
    fields.iter().filter(|(_, n)| *n > 0).map(|(k, n)| ((*k).to_owned(), json!(n))).collect()
}

fn write_rs_status(cluster: &Cluster, rs: &Value, want: usize, pods: &[Value]) {
    let ready = pods.iter().filter(|p| pod_ready(p)).count();
    let mut status = Value::Object(counts(&[
        ("readyReplicas", ready),
        ("availableReplicas", ready),
        ("fullyLabeledReplicas", pods.len()),
    ]));
    status["replicas"] = json!(pods.len());
    status["observedGeneration"] = rs.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
    let same_spec = rs.pointer("/spec/replicas").and_then(Value::as_u64) == Some(want as u64);
    if rs.get("status") != Some(&status) || !same_spec {
        let _ = cluster.store.mutate(replicasets(), meta::namespace(rs), meta::name(rs), |o| {
            o["spec"]["replicas"] = json!(want);
            o["status"] = status;
        });
    }
}

/// `maxUnavailable` resolved against `replicas` (percentages round down); 0 for Recreate.
fn max_unavailable(d: &Value, replicas: usize) -> usize {
    match d.pointer("/spec/strategy/rollingUpdate/maxUnavailable") {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as usize,
        Some(Value::String(s)) => {
            s.trim_end_matches('%').parse::<usize>().map_or(0, |p| replicas * p / 100)
        }
        _ => 0,
    }
}

fn write_status(
    cluster: &Cluster,
    progress: &mut Progress,
    d: &Value,
    rs_name: &str,
    replicas: usize,
    new_pods: &[Value],
    old_pods: &[Value],
) {
    let updated = new_pods.len();
    let total = updated + old_pods.len();
    let ready = new_pods.iter().chain(old_pods).filter(|p| pod_ready(p)).count();
    let generation = d.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
    let counted = json!([updated, total, ready, rs_name, generation]);
    let now = Instant::now();
    let entry = progress.0.entry(meta::uid(d).to_owned()).or_insert((Value::Null, now));
    if entry.0 != counted {
        *entry = (counted, now);
    }
    let deadline =
        d.pointer("/spec/progressDeadlineSeconds").and_then(Value::as_u64).unwrap_or(600);
    let complete = updated == replicas && total == replicas && ready == replicas;
    let old = d.pointer("/status/conditions");
    let progressing = if complete {
        condition(
            old,
            "Progressing",
            true,
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
        )
    } else if now.duration_since(entry.1) > Duration::from_secs(deadline) {
        condition(
            old,
            "Progressing",
            false,
            "ProgressDeadlineExceeded",
            &format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
        )
    } else {
        condition(
            old,
            "Progressing",
            true,
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{rs_name}\" is progressing."),
        )
    };
    let available = ready + max_unavailable(d, replicas) >= replicas;
    let available = if available {
        condition(
            old,
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        condition(
            old,
            "Available",
            false,
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    let mut status = Value::Object(counts(&[
        ("replicas", total),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", ready),
        ("unavailableReplicas", replicas.saturating_sub(ready)),
    ]));
    status["observedGeneration"] = generation;
    status["conditions"] =
        json!([with_update_time(available, old), with_update_time(progressing, old)]);
    if d.get("status") != Some(&status) {
        let _ = cluster
            .store
            .mutate(deployments(), meta::namespace(d), meta::name(d), |o| o["status"] = status);
    }
}

/// Deployment conditions also carry `lastUpdateTime`, moved when reason or message change.
fn with_update_time(mut c: Value, old: Option<&Value>) -> Value {
    let previous =
        old.and_then(Value::as_array).and_then(|cs| cs.iter().find(|p| p["type"] == c["type"]));
    c["lastUpdateTime"] = match previous {
        Some(p)
            if p["reason"] == c["reason"]
                && p["message"] == c["message"]
                && p["status"] == c["status"] =>
        {
            p["lastUpdateTime"].clone()
        }
        _ => json!(meta::now()),
    };
    c
}

pub(crate) fn deployment_of_pod(cluster: &Cluster, pod: &Value) -> Option<String> {
    let rs_ref = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["kind"] == "ReplicaSet")?;
    let rs = cluster.store.get(
        resources::replicasets(),
        meta::namespace(pod),
        rs_ref["name"].as_str()?,
    )?;
    let d_ref = rs
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["kind"] == "Deployment")?;
    d_ref["name"].as_str().map(str::to_owned)
}
