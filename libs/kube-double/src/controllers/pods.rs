//! The simulated scheduler and kubelet: each pod not run by the kubelet double (`kubelet.rs`) gets the
//! status its [`PodBehaviour`] describes (scheduling, IP, phase, conditions, container
//! statuses, restart counts, logs, events), and pods being deleted are removed.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Cluster, condition, deployment, events};
use crate::behaviour::PodBehaviour;
use crate::resources::pods;
use crate::store::meta;

/// The one node simulated pods are scheduled to.
pub const NODE: &str = "kube-double-node";

/// How long a simulated image pull fails before the kubelet backs off.
const PULL_FAILS_FOR: Duration = Duration::from_secs(1);

pub(crate) fn reconcile_all(cluster: &Cluster) {
    let (all, _) = cluster.store.list(pods(), None);
    for pod in all {
        let ns = meta::namespace(&pod);
        let deployment = deployment::deployment_of_pod(cluster, &pod);
        let assigned = cluster.behaviours.lock().assign(meta::uid(&pod), ns, deployment.as_deref());
        if matches!(assigned.behaviour, PodBehaviour::Run(_)) {
            continue; // the kubelet double's
        }
        if meta::is_terminating(&pod) {
            cluster.store.finish_pod_deletion(ns, meta::name(&pod));
            cluster.logs.forget_pod(ns, meta::name(&pod));
            cluster.behaviours.lock().forget(meta::uid(&pod));
            continue;
        }
        let elapsed = assigned.since.elapsed();
        simulate(cluster, &pod, &assigned.behaviour, elapsed);
    }
}

fn containers(pod: &Value) -> Vec<(String, String)> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_owned(),
                        c["image"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn simulate(cluster: &Cluster, pod: &Value, behaviour: &PodBehaviour, elapsed: Duration) {
    let old = pod.pointer("/status/conditions");
    let started = pod.pointer("/status/startTime").cloned().unwrap_or_else(|| json!(meta::now()));
    if let PodBehaviour::Unschedulable { message } = behaviour {
        let status = json!({
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [condition(old, "PodScheduled", false, "Unschedulable", message)],
        });
        write(cluster, pod, None, status);
        events::record(
            &cluster.store,
            pod,
            "Warning",
            "FailedScheduling",
            message,
            "default-scheduler",
        );
        return;
    }
    let ip = match pod.pointer("/status/podIP").and_then(Value::as_str) {
        Some(ip) => ip.to_owned(),
        None => cluster.ips.next(),
    };
    let (phase, ready, statuses) = container_states(cluster, pod, behaviour, elapsed, &started);
    let not_ready: Vec<String> = statuses
        .iter()
        .filter(|s| s["ready"] != true)
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    let why = format!("containers with unready status: [{}]", not_ready.join(" "));
    let (reason, message) = if ready { ("", "") } else { ("ContainersNotReady", why.as_str()) };
    let status = json!({
        "phase": phase,
        "qosClass": "BestEffort",
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "conditions": [
            condition(old, "PodReadyToStartContainers", true, "", ""),
            condition(old, "Initialized", true, "", ""),
            condition(old, "Ready", ready, reason, message),
            condition(old, "ContainersReady", ready, reason, message),
            condition(old, "PodScheduled", true, "", ""),
        ],
        "containerStatuses": statuses,
    });
    write(cluster, pod, Some(NODE), status);
}

type States = (&'static str, bool, Vec<Value>);

fn container_states(
    cluster: &Cluster,
    pod: &Value,
    behaviour: &PodBehaviour,
    elapsed: Duration,
    started: &Value,
) -> States {
    let ns = meta::namespace(pod);
    let name = meta::name(pod);
    let base = |c: &str, image: &str| json!({"name": c, "image": image, "imageID": "", "ready": false, "restartCount": 0, "started": false});
    let mut statuses = Vec::new();
    let (phase, ready) = match behaviour {
        PodBehaviour::Ready { after } if elapsed < *after => {
            for (c, image) in containers(pod) {
                let mut s = base(&c, &image);
                s["state"] = json!({"waiting": {"reason": "ContainerCreating"}});
                statuses.push(s);
            }
            ("Pending", false)
        }
        PodBehaviour::ImagePullBackOff { message } => {
            for (c, image) in containers(pod) {
                let mut s = base(&c, &image);
                s["state"] = if elapsed < PULL_FAILS_FOR {
                    json!({"waiting": {"reason": "ErrImagePull", "message": message}})
                } else {
                    json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\": ErrImagePull: {message}")}})
                };
                statuses.push(s);
            }
            events::record(
                &cluster.store,
                pod,
                "Warning",
                "Failed",
                &format!("Failed to pull image: {message}"),
                "kubelet",
            );
            ("Pending", false)
        }
        PodBehaviour::CrashLoopBackOff { exit_code, log_lines } => {
            let restarts = 1 + elapsed.as_secs();
            for (c, image) in containers(pod) {
                cluster.logs.set_crashing(ns, name, &c, log_lines);
                let mut s = base(&c, &image);
                s["restartCount"] = json!(restarts);
                s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off 10s restarting failed container={c} pod={name}_{ns}({})", meta::uid(pod))}});
                let reason = if *exit_code == 0 { "Completed" } else { "Error" };
                s["lastState"] = json!({"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": started}});
                statuses.push(s);
            }
            events::back_off(&cluster.store, pod);
            ("Running", false)
        }
        _ => {
            for (c, image) in containers(pod) {
                let mut s = base(&c, &image);
                s["ready"] = json!(true);
                s["started"] = json!(true);
                s["state"] = json!({"running": {"startedAt": started}});
                statuses.push(s);
            }
            ("Running", true)
        }
    };
    (phase, ready, statuses)
}

/// Writes the pod's status (and node) when they changed.
pub(crate) fn write(cluster: &Cluster, pod: &Value, node: Option<&str>, status: Value) {
    let node_now = pod.pointer("/spec/nodeName").and_then(Value::as_str);
    if pod.get("status") == Some(&status) && node_now == node {
        return;
    }
    let _ = cluster.store.mutate(pods(), meta::namespace(pod), meta::name(pod), |p| {
        if let Some(node) = node {
            p["spec"]["nodeName"] = json!(node);
        }
        p["status"] = status;
    });
}
