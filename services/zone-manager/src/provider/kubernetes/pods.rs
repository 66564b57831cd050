//! Pods as workers: their view (state, addresses, commit, restarts) and, for one that is not
//! running, the reason the cluster gives — the scheduler's (`Unschedulable` and its message),
//! the kubelet's (`ImagePullBackOff`, `CrashLoopBackOff` with the exit code), or a failing
//! readiness probe.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::Api;
use kube::api::LogParams;

use super::manifests::{COMMIT_ANNOTATION, TRACK_LABEL};
use super::settings::{ADMIN_PORT, GRPC_PORT, MCP_PORT};
use crate::model::{SizeClass, TrackKind, WorkerPhase};
use crate::provider::{NotReadyWorker, WorkerView};

/// Log lines kept for a worker that is not running.
const LOG_LINES: i64 = 20;

pub fn track_of(pod: &Pod) -> Option<TrackKind> {
    pod.metadata.labels.as_ref()?.get(TRACK_LABEL).and_then(|t| TrackKind::from_name(t))
}

pub fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn node_status(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == "node")
}

fn condition<'a>(pod: &'a Pod, kind: &str) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && condition(pod, "Ready").is_some_and(|c| c.status == "True")
}

/// Why the pod is not serving, and its last exit code; `None` when it is ready.
pub fn not_ready_reason(pod: &Pod) -> Option<(String, Option<i32>)> {
    if is_ready(pod) {
        return None;
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(("terminating".into(), None));
    }
    let status = pod.status.as_ref();
    let exit_code = node_status(pod)
        .and_then(|c| c.last_state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code);
    if let Some(scheduled) = condition(pod, "PodScheduled").filter(|c| c.status == "False") {
        let reason = scheduled.reason.clone().unwrap_or_else(|| "not scheduled".into());
        let message = scheduled.message.clone().unwrap_or_default();
        return Some((format!("{reason}: {message}").trim_end_matches(": ").to_owned(), None));
    }
    if let Some(waiting) = node_status(pod).and_then(|c| c.state.as_ref()?.waiting.as_ref()) {
        let reason = waiting.reason.clone().unwrap_or_else(|| "waiting".into());
        let mut text = match &waiting.message {
            Some(message) if !message.is_empty() => format!("{reason}: {message}"),
            _ => reason,
        };
        if let Some(code) = exit_code {
            text.push_str(&format!(" (last exit code {code})"));
        }
        return Some((text, exit_code));
    }
    if let Some(terminated) = node_status(pod).and_then(|c| c.state.as_ref()?.terminated.as_ref()) {
        let reason = terminated.reason.clone().unwrap_or_else(|| "terminated".into());
        return Some((
            format!("{reason} (exit code {})", terminated.exit_code),
            Some(terminated.exit_code),
        ));
    }
    let phase = status.and_then(|s| s.phase.clone()).unwrap_or_else(|| "Pending".into());
    if phase == "Running" {
        let detail = condition(pod, "Ready").and_then(|c| c.message.clone()).unwrap_or_default();
        let text = format!("running, readiness (/readyz) not passing {detail}");
        return Some((text.trim().to_owned(), exit_code));
    }
    let detail = status.and_then(|s| s.message.clone().or(s.reason.clone())).unwrap_or_default();
    Some((format!("{phase} {detail}").trim().to_owned(), exit_code))
}

/// The pod's last log lines, from its previous container when it has restarted.
pub async fn last_log_lines(pods: &Api<Pod>, pod: &Pod) -> Vec<String> {
    let restarted = node_status(pod).is_some_and(|c| c.restart_count > 0);
    let params = |previous| LogParams {
        container: Some("node".into()),
        tail_lines: Some(LOG_LINES),
        previous,
        ..Default::default()
    };
    let name = name(pod);
    let text = match pods.logs(&name, &params(restarted)).await {
        Ok(text) => text,
        Err(_) if restarted => pods.logs(&name, &params(false)).await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    text.lines().map(str::to_owned).collect()
}

/// The pod as a worker.
pub fn view(pod: &Pod, size: SizeClass) -> Option<WorkerView> {
    let track = track_of(pod)?;
    let status = pod.status.as_ref();
    let ip = status.and_then(|s| s.pod_ip.clone()).unwrap_or_default();
    let address = |port: u16| if ip.is_empty() { String::new() } else { format!("{ip}:{port}") };
    let reason = not_ready_reason(pod);
    let state = match (&reason, pod.metadata.deletion_timestamp.is_some()) {
        (None, _) => WorkerPhase::Ready,
        (_, true) => WorkerPhase::Draining,
        (Some(_), false) => match status.and_then(|s| s.phase.as_deref()) {
            Some("Running") => WorkerPhase::NotReady,
            Some("Failed") | Some("Succeeded") => WorkerPhase::Exited,
            _ => WorkerPhase::Starting,
        },
    };
    let started_at_ms =
        status.and_then(|s| s.start_time.as_ref()).map_or(0, |t| t.0.as_millisecond());
    let annotations = pod.metadata.annotations.as_ref();
    Some(WorkerView {
        id: name(pod),
        track,
        state,
        reason: reason.as_ref().map(|r| r.0.clone()).unwrap_or_default(),
        mcp_address: address(MCP_PORT),
        mcp_local: String::new(),
        admin_address: address(ADMIN_PORT),
        grpc_address: address(GRPC_PORT),
        loaded_commit: annotations
            .and_then(|a| a.get(COMMIT_ANNOTATION))
            .cloned()
            .unwrap_or_default(),
        restarts: node_status(pod).map_or(0, |c| c.restart_count.max(0) as u32),
        started_at_ms,
        pid: None,
        exit_code: reason.and_then(|r| r.1),
        last_log_lines: Vec::new(),
        limits: format!(
            "cpu {}m, memory {}Mi (Kubernetes requests = limits)",
            size.cpu_millis(),
            size.memory_bytes() >> 20
        ),
    })
}

/// A pod that did not become ready, with its log tail.
pub async fn not_ready(pods: &Api<Pod>, pod: &Pod) -> NotReadyWorker {
    let (reason, exit_code) =
        not_ready_reason(pod).unwrap_or_else(|| ("became ready too late".into(), None));
    let last_log_lines = match pod.status.as_ref().and_then(|s| s.pod_ip.as_ref()) {
        // A pod that never got an IP never ran: it has no log.
        Some(_) => last_log_lines(pods, pod).await,
        None => Vec::new(),
    };
    NotReadyWorker { id: name(pod), reason, exit_code, last_log_lines }
}
