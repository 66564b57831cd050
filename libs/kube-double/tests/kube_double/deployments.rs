//! The deployment controller: rollout to ready with status, rolling a new template,
//! scaling (also through `/scale`), the progress deadline, HPA clamping, cascading delete.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::common::{eventually, from_json, start};
use super::crud::deployment_json;

fn condition(d: &Deployment, kind: &str) -> Option<(String, String)> {
    let c = d.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

async fn pods_of(api: &Api<Pod>, app: &str) -> Vec<Pod> {
    api.list(&ListParams::default().labels(&format!("app={app}"))).await.unwrap().items
}

#[tokio::test]
async fn a_deployment_rolls_out_to_ready_rolls_a_new_template_and_scales() {
    let (_double, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut manifest = deployment_json("web", "web:1");
    manifest["spec"]["replicas"] = json!(2);
    deployments.create(&PostParams::default(), &from_json(manifest)).await.unwrap();
    let ready = eventually("two ready replicas", || async {
        let d = deployments.get("web").await.map_err(|e| e.to_string())?;
        let s = d.status.clone().unwrap_or_default();
        let complete = s.ready_replicas == Some(2)
            && s.available_replicas == Some(2)
            && s.updated_replicas == Some(2)
            && condition(&d, "Progressing")
                == Some(("True".into(), "NewReplicaSetAvailable".into()));
        if complete { Ok(d) } else { Err(format!("{s:?}")) }
    })
    .await;
    let status = ready.status.unwrap();
    assert_eq!(
        (status.observed_generation, status.replicas, status.unavailable_replicas),
        (Some(1), Some(2), None)
    );
    let listed = pods_of(&pods, "web").await;
    assert_eq!(listed.len(), 2);
    let hash = listed[0].labels()["pod-template-hash"].clone();
    let mut ips = Vec::new();
    for pod in &listed {
        assert!(pod.name_any().starts_with(&format!("web-{hash}-")), "{}", pod.name_any());
        assert_eq!(pod.name_any().len(), format!("web-{hash}-").len() + 5);
        let owner = &pod.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.clone()),
            ("ReplicaSet", format!("web-{hash}"))
        );
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("kube-double-node"));
        assert_eq!(spec.containers[0].image.as_deref(), Some("web:1"));
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ip = status.pod_ip.clone().unwrap();
        assert!(ip.starts_with("127.1."), "{ip}");
        ips.push(ip);
    }
    ips.dedup();
    assert_eq!(ips.len(), 2, "pod IPs are distinct");

    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "web:2"}]}}}})))
        .await
        .unwrap();
    eventually("the new template rolled out", || async {
        let d = deployments.get("web").await.map_err(|e| e.to_string())?;
        let pods = pods_of(&pods, "web").await;
        let new = pods
            .iter()
            .filter(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("web:2"))
            .count();
        let s = d.status.clone().unwrap_or_default();
        if new == 2
            && pods.len() == 2
            && s.observed_generation == Some(2)
            && s.updated_replicas == Some(2)
            && s.ready_replicas == Some(2)
        {
            Ok(())
        } else {
            Err(format!("{new} new of {} pods; {s:?}", pods.len()))
        }
    })
    .await;
    let rs: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        rs.list(&ListParams::default()).await.unwrap().items.len(),
        2,
        "the old ReplicaSet is kept"
    );

    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    eventually("scaled up through /scale", || async {
        let n = pods_of(&pods, "web").await.len();
        if n == 3 { Ok(()) } else { Err(format!("{n} pods")) }
    })
    .await;
    let scale = deployments.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(3));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 1}})))
        .await
        .unwrap();
    eventually("scaled down", || async {
        let n = pods_of(&pods, "web").await.len();
        if n == 1 { Ok(()) } else { Err(format!("{n} pods")) }
    })
    .await;

    deployments.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(pods_of(&pods, "web").await.is_empty(), "deleting the owner removes its pods");
    assert!(rs.list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn an_unready_rollout_exceeds_its_progress_deadline() {
    let (double, client) = start().await;
    double.set_pod_behaviour(
        "default",
        ramen_kube_double::PodBehaviour::Unschedulable {
            message: "0/3 nodes are available: 3 Insufficient cpu.".into(),
        },
    );
    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let mut manifest = deployment_json("slow", "slow:1");
    manifest["spec"]["progressDeadlineSeconds"] = json!(1);
    deployments.create(&PostParams::default(), &from_json(manifest)).await.unwrap();
    eventually("ProgressDeadlineExceeded", || async {
        let d = deployments.get("slow").await.map_err(|e| e.to_string())?;
        match (condition(&d, "Progressing"), condition(&d, "Available")) {
            (Some(p), Some(a))
                if p == ("False".into(), "ProgressDeadlineExceeded".into()) && a.0 == "False" =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let d = deployments.get("slow").await.unwrap();
    assert_eq!(d.status.unwrap().unavailable_replicas, Some(1));
}

#[tokio::test]
async fn the_hpa_clamps_replicas_into_its_range() {
    let (_double, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &from_json(deployment_json("worker", "w:1")))
        .await
        .unwrap();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client, "default");
    let hpa: HorizontalPodAutoscaler = from_json(json!({
        "metadata": {"name": "worker"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}, "minReplicas": 2, "maxReplicas": 4},
    }));
    hpas.create(&PostParams::default(), &hpa).await.unwrap();
    eventually("raised to minReplicas", || async {
        let d = deployments.get("worker").await.map_err(|e| e.to_string())?;
        let h = hpas.get("worker").await.map_err(|e| e.to_string())?;
        let desired = h.status.as_ref().map(|s| s.desired_replicas);
        match (d.spec.unwrap().replicas, desired) {
            (Some(2), Some(2)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    deployments
        .patch_scale(
            "worker",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    eventually("lowered to maxReplicas", || async {
        let d = deployments.get("worker").await.map_err(|e| e.to_string())?;
        let r = d.status.and_then(|s| s.ready_replicas);
        match (d.spec.unwrap().replicas, r) {
            (Some(4), Some(4)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let h = hpas.get("worker").await.unwrap();
    assert_eq!(h.status.unwrap().current_replicas, Some(4));
}
