//! The kubelet double: pods of a local image run as processes behind their own loopback IP,
//! with Secret volumes that follow the Secret, readiness from the probe, logs, restarts, ends
//! and deletion.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::Api;
use kube::api::{DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use ramen_kube_double::{LocalImage, PodBehaviour};
use serde_json::json;

use super::common::{eventually, from_json, is_ready, namespace, start};

/// `/srv/serve` in the image: Python's HTTP server on the pod IP, serving the directory given.
fn http_image() -> LocalImage {
    LocalImage {
        entrypoint: vec!["/srv/serve".into()],
        program: vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"echo "serving $1 as $POD_NAME"; exec python3 -m http.server --bind "$POD_IP" 8080 --directory "$1""#.into(),
            "serve".into(),
        ],
        env: vec![("PYTHONUNBUFFERED".into(), "1".into())],
    }
}

fn secret(name: &str, page: &str) -> Secret {
    from_json(json!({"metadata": {"name": name}, "stringData": {"index.html": page}}))
}

fn pod(name: &str, restart: &str, command: &[&str]) -> Pod {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "web",
                "image": "registry.example/web:1",
                "command": command,
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}},
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "volumeMounts": [{"name": "site", "mountPath": "/var/www", "readOnly": true}],
            }],
            "volumes": [{"name": "site", "secret": {"secretName": "site"}}],
        },
    }))
}

async fn get(url: &str) -> Result<String, String> {
    let http =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build().unwrap();
    let answer = http.get(url).send().await.map_err(|e| e.to_string())?;
    answer.text().await.map_err(|e| e.to_string())
}

async fn ready_ip(pods: &Api<Pod>, name: &str) -> String {
    eventually("the pod is ready with an IP", || async {
        let pod = pods.get(name).await.map_err(|e| e.to_string())?;
        let status = pod.status.unwrap_or_default();
        let ready = is_ready(&status);
        match (ready, status.pod_ip) {
            (true, Some(ip)) => Ok(ip),
            other => Err(format!("{other:?} phase {:?}", status.phase)),
        }
    })
    .await
}

#[tokio::test]
async fn a_local_image_serves_at_its_pod_ip_and_follows_its_secret_volume() {
    let (double, client) = start().await;
    namespace(&client, "web").await;
    double.set_pod_behaviour("web", PodBehaviour::Run(http_image()));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "web");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "web");
    pods.create(&PostParams::default(), &pod("site", "Always", &["/srv/serve", "/var/www"]))
        .await
        .unwrap();

    // No Secret yet: the pod waits in ContainerCreating and an event says why.
    let events: Api<Event> = Api::namespaced(client.clone(), "web");
    let mount = eventually("a FailedMount event", || async {
        let list = events.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("FailedMount"))
            .and_then(|e| e.message)
            .ok_or_else(|| "none yet".to_owned())
    })
    .await;
    assert!(mount.contains("secret \"site\" not found"), "{mount}");
    let waiting = pods.get("site").await.unwrap().status.unwrap();
    assert_eq!(waiting.phase.as_deref(), Some("Pending"));

    secrets.create(&PostParams::default(), &secret("site", "first page")).await.unwrap();
    let ip = ready_ip(&pods, "site").await;
    assert!(ip.starts_with("127.2."), "a pod IP of its own: {ip}");
    let url = format!("http://{ip}:8080/index.html");
    assert_eq!(get(&url).await.unwrap(), "first page");

    // The mounted file follows the Secret, without a restart.
    let patch = json!({"stringData": {"index.html": "second page"}});
    secrets.patch("site", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    eventually("the volume follows the Secret", || async {
        let page = get(&url).await?;
        if page == "second page" { Ok(()) } else { Err(page) }
    })
    .await;
    let status = pods.get("site").await.unwrap().status.unwrap();
    assert_eq!(status.container_statuses.unwrap()[0].restart_count, 0);

    // Its output is the container's log; the env came from the pod's fields.
    let log = pods.logs("site", &LogParams::default()).await.unwrap();
    assert!(log.contains("serving "), "{log}");
    assert!(log.contains("as site"), "metadata.name reached the process: {log}");
    assert!(log.contains("GET /index.html"), "the server's access log: {log}");
    assert!(!log.contains("/var/www"), "the mount path was rewritten to the sandbox: {log}");

    // Deleted: the object goes and the process stops (SIGTERM).
    pods.delete("site", &DeleteParams::default()).await.unwrap();
    eventually("the process is gone", || async {
        match get(&url).await {
            Err(_) => Ok(()),
            Ok(page) => Err(format!("still serving {page}")),
        }
    })
    .await;
}

#[tokio::test]
async fn a_container_that_exits_restarts_or_ends_the_pod_by_its_restart_policy() {
    let (double, client) = start().await;
    namespace(&client, "jobs").await;
    let image = LocalImage {
        entrypoint: vec!["/bin/task".into()],
        program: vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"echo "run with $1"; exit "$2""#.into(),
            "task".into(),
        ],
        env: Vec::new(),
    };
    double.set_pod_behaviour("jobs", PodBehaviour::Run(image));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "jobs");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "jobs");
    secrets.create(&PostParams::default(), &secret("site", "unused")).await.unwrap();
    pods.create(
        &PostParams::default(),
        &pod("once", "Never", &["/bin/task", "/var/www/index.html", "3"]),
    )
    .await
    .unwrap();
    pods.create(&PostParams::default(), &pod("again", "Always", &["/bin/task", "x", "0"]))
        .await
        .unwrap();

    let ended = eventually("the Never pod ends Failed", || async {
        let pod = pods.get("once").await.map_err(|e| e.to_string())?;
        let status = pod.status.unwrap_or_default();
        if status.phase.as_deref() == Some("Failed") {
            Ok(status)
        } else {
            Err(format!("{:?}", status.phase))
        }
    })
    .await;
    let container = &ended.container_statuses.unwrap()[0];
    let terminated = container.state.as_ref().unwrap().terminated.as_ref().expect("terminated");
    assert_eq!(terminated.exit_code, 3);
    let log = pods.logs("once", &LogParams::default()).await.unwrap();
    assert!(log.contains("run with /"), "{log}");
    assert!(
        log.contains("volumes/site/index.html"),
        "an argument under a mount is rewritten: {log}"
    );

    let restarted = eventually("the Always pod restarts", || async {
        let pod = pods.get("again").await.map_err(|e| e.to_string())?;
        let status = pod.status.unwrap_or_default();
        let container = status.container_statuses.unwrap_or_default().into_iter().next();
        match container {
            Some(c) if c.restart_count >= 2 => Ok(c),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let last = restarted.last_state.unwrap().terminated.expect("the last run's end");
    assert_eq!(last.exit_code, 0);
    assert_eq!(last.reason.as_deref(), Some("Completed"));
    let previous =
        pods.logs("again", &LogParams { previous: true, ..Default::default() }).await.unwrap();
    assert!(previous.contains("run with x"), "{previous}");
}
