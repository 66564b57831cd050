//! Simulated pod behaviours: delayed readiness, unschedulable, image pull back-off, crash
//! loops with logs; events; orphaning.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{ListParams, LogParams, PostParams};
use kube::{Api, ResourceExt};
use ramen_kube_double::PodBehaviour;

use super::common::{api_error, eventually, from_json, is_ready, namespace, start};
use super::crud::deployment_json;

async fn the_pod(pods: &Api<Pod>) -> Result<Pod, String> {
    let list = pods.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
    list.items.into_iter().next().ok_or_else(|| "no pod yet".to_owned())
}

#[tokio::test]
async fn unschedulable_pods_say_why_in_conditions_and_events() {
    let (double, client) = start().await;
    namespace(&client, "full").await;
    let message = "0/3 nodes are available: 3 Insufficient cpu.";
    double.set_pod_behaviour("full", PodBehaviour::Unschedulable { message: message.into() });
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "full");
    deployments
        .create(&PostParams::default(), &from_json(deployment_json("big", "big:1")))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "full");
    let pod = eventually("an unschedulable pod", || async {
        let pod = the_pod(&pods).await?;
        let scheduled = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled").cloned());
        match scheduled {
            Some(c) if c.status == "False" => Ok((pod, c)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(pod.1.reason.as_deref(), Some("Unschedulable"));
    assert_eq!(pod.1.message.as_deref(), Some(message));
    assert_eq!(pod.0.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    assert!(pod.0.spec.as_ref().unwrap().node_name.is_none());
    let events: Api<Event> = Api::namespaced(client, "full");
    let events = events.list(&ListParams::default()).await.unwrap().items;
    assert!(events.iter().any(|e| e.reason.as_deref() == Some("FailedScheduling")
        && e.message.as_deref() == Some(message)));
}

#[tokio::test]
async fn crash_looping_pods_restart_and_serve_their_logs() {
    let (double, client) = start().await;
    let lines = vec!["starting".to_owned(), "config invalid: no such zone".to_owned()];
    double.set_deployment_pod_behaviour(
        "default",
        "bad",
        PodBehaviour::CrashLoopBackOff { exit_code: 3, log_lines: lines },
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &from_json(deployment_json("bad", "bad:1")))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = eventually("a crash loop with two restarts", || async {
        let pod = the_pod(&pods).await?;
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first().cloned());
        match status {
            Some(c) if c.restart_count >= 2 => Ok((pod, c)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let (pod, status) = pod;
    assert_eq!(status.state.unwrap().waiting.unwrap().reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(status.last_state.unwrap().terminated.unwrap().exit_code, 3);
    assert!(!status.ready);
    let tail = LogParams { tail_lines: Some(1), ..Default::default() };
    assert_eq!(pods.logs(&pod.name_any(), &tail).await.unwrap(), "config invalid: no such zone\n");
    let previous = LogParams { previous: true, ..Default::default() };
    assert_eq!(
        pods.logs(&pod.name_any(), &previous).await.unwrap(),
        "starting\nconfig invalid: no such zone\n"
    );
    let wrong = LogParams { container: Some("nope".into()), ..Default::default() };
    let (code, ..) = api_error(pods.logs(&pod.name_any(), &wrong).await);
    assert_eq!(code, 400);
}

#[tokio::test]
async fn image_pull_failures_and_delayed_readiness() {
    let (double, client) = start().await;
    double.set_pod_behaviour(
        "default",
        PodBehaviour::ImagePullBackOff { message: "manifest unknown".into() },
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = from_json(
        serde_json::json!({"metadata": {"name": "pull"}, "spec": {"containers": [{"name": "c", "image": "nope:1"}]}}),
    );
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("ImagePullBackOff", || async {
        let pod = pods.get("pull").await.map_err(|e| e.to_string())?;
        let reason = pod
            .status
            .and_then(|s| s.container_statuses)
            .and_then(|c| c[0].state.clone())
            .and_then(|s| s.waiting)
            .and_then(|w| w.reason);
        if reason.as_deref() == Some("ImagePullBackOff") {
            Ok(())
        } else {
            Err(format!("{reason:?}"))
        }
    })
    .await;
    let (code, _, message) = api_error(pods.logs("pull", &LogParams::default()).await);
    assert_eq!(code, 400);
    assert!(message.contains("is waiting to start"), "{message}");

    double.set_pod_behaviour("default", PodBehaviour::Ready { after: Duration::from_millis(300) });
    double.reevaluate_pods("default");
    eventually("ready after the delay", || async {
        let pod = pods.get("pull").await.map_err(|e| e.to_string())?;
        let status = pod.status.unwrap_or_default();
        let ready = is_ready(&status);
        if ready && status.phase.as_deref() == Some("Running") {
            Ok(())
        } else {
            Err("not ready".to_owned())
        }
    })
    .await;
    double.append_pod_log("default", "pull", "c", "hello");
    assert_eq!(pods.logs("pull", &LogParams::default()).await.unwrap(), "hello\n");
    let _ = pod.name_any();
}
