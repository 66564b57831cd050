//! Deploys to a Kubernetes zone, with the real zone-manager's Kubernetes provider against the
//! played Kubernetes API (`ramen-kube-double`):
//! - a canary that never schedules (simulated pods): the job names the pod and the scheduler's
//!   reason, the canary is scaled back to zero, stable is never touched;
//! - a deploy that goes through (pods run for real by the double's kubelet, the worker image
//!   played by `ramen-runner`): the builder pod builds the environment, the canary's node
//!   loads the snapshot from the blob store and passes the smoke `tools/list`, stable rolls,
//!   and an MCP key of the group is served by the stable pod; a second deploy and a rollback
//!   (the older commit deployed again) roll the pods in place.

use std::time::Duration;

use ramen_config::{ClusterAccess, ClusterConfig};
use ramen_deployer::jobs::tools_list;
use ramen_kube_double::{KubeDouble, LocalImage, PodBehaviour};
use ramen_proto::common::v1::{self as common, DeployStep, StepStatus};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::zone::v1 as zpb;
use ramen_testkit::workers::{python, runner_binary, site_packages};
use ramen_zone_manager::provider::kubernetes::manifests::WORKER_COMMAND;

use crate::repo::{Repo, extra_tool};
use crate::setup::start;
use crate::support::{MINUTE, World, as_actor, client, fast, job_when, step, summary, terminal};

const NAMESPACE: &str = "ramen-team-eu1";

/// A world whose zone-manager drives the double as the `gke-eu` cluster (gcp, europe-west1).
async fn world_on(double: &KubeDouble, kube_dir: &std::path::Path) -> World {
    let kubeconfig = kube_dir.join("kubeconfig");
    double.write_kubeconfig(&kubeconfig, "gke").unwrap();
    let path = kubeconfig.display().to_string();
    World::start_with(move |config| {
        config.kubernetes.clusters.insert(
            "gke-eu".into(),
            ClusterConfig {
                provider: "gcp".into(),
                region: "europe-west1".into(),
                access: ClusterAccess::Kubeconfig,
                kubeconfig: path,
                context: "gke".into(),
                ..ClusterConfig::default()
            },
        );
        config.kubernetes.worker_image = "registry.example/ramen-worker:1.0".into();
        config.kubernetes.poll_interval = Duration::from_millis(100);
        // What the worker image holds, on this machine: the pods run here.
        config.kubernetes.python = python().display().to_string();
        config.kubernetes.site_packages = vec![site_packages().display().to_string()];
        config.kubernetes.pip_args = vec!["--no-index".into()];
        config.kubernetes.bind_pod_ip = true;
    })
    .await
}

async fn gcp_zone_and_group(world: &World, client: &DeployerClient, repo: &Repo) {
    let zone = zpb::CreateZoneRequest {
        name: "eu1".into(),
        provider: common::Provider::Gcp as i32,
        region: "europe-west1-b".into(),
        ..Default::default()
    };
    let as_deployer = as_actor(ramen_proto::metadata::ACTOR_DEPLOYER, zone);
    world.zones.clone().create_zone(as_deployer).await.expect("gcp zone");
    let create = pb::CreateGroupRequest {
        name: "team".into(),
        repo_url: repo.url(),
        default_ref: "main".into(),
        ..Default::default()
    };
    client.clone().create_group(as_actor(&world.admin, create)).await.expect("group created");
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        zones: vec!["eu1".into()],
        // The second deploy adds a tool; the review has its own tests (review.rs).
        surface_changes: pb::SurfaceChanges::Allow as i32,
        ..Default::default()
    };
    client.clone().create_environment(as_actor(&world.admin, env)).await.expect("environment");
}

type DeployerClient = ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient<
    ramen_clients::fakes::AsGateway,
>;

#[tokio::test]
async fn a_deploy_to_a_kubernetes_zone_builds_in_a_pod_passes_smoke_and_serves_from_stable() {
    let double = KubeDouble::start().await.expect("the double starts");
    let worker_image = LocalImage {
        entrypoint: WORKER_COMMAND.iter().map(|s| (*s).to_owned()).collect(),
        program: vec![runner_binary().display().to_string()],
        env: Vec::new(),
    };
    double.set_pod_behaviour(NAMESPACE, PodBehaviour::Run(worker_image));
    let kube_dir = tempfile::tempdir().unwrap();
    let world = world_on(&double, kube_dir.path()).await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    gcp_zone_and_group(&world, &client, &repo).await;

    let id = start(&world, &client, "team", "main").await;
    let job = job_when(&client, &world.admin, &id, "the deploy ends", 3 * MINUTE, terminal).await;
    assert_eq!(job.state(), common::JobState::Succeeded, "{:?}", summary(&job));
    for done in
        [DeployStep::WriteConfig, DeployStep::Canary, DeployStep::ReloadSmoke, DeployStep::Stable]
    {
        assert_eq!(
            step(&job, "eu1", done).status(),
            StepStatus::Succeeded,
            "{done:?}: {:?}",
            summary(&job)
        );
    }
    let write_log: Vec<String> =
        step(&job, "eu1", DeployStep::WriteConfig).log.iter().map(|l| l.text.clone()).collect();
    assert!(
        write_log.iter().any(|l| l.contains("installed for this deploy")),
        "the builder pod built the environment: {write_log:?}"
    );
    let builders = double
        .list("v1", "Pod", Some(NAMESPACE))
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["app.kubernetes.io/component"] == "environment-builder")
        .count();
    assert_eq!(builders, 0, "the builder pod is removed once it answered");

    // Stable serves the group's tools to one of its keys, from its pod's own address.
    let stable = world.workers("team", "eu1", common::Track::Worker).await;
    assert_eq!(stable.len(), 1, "{stable:?}");
    assert!(stable[0].mcp_address.starts_with("127.2."), "{:?}", stable[0]);
    let key = world.mcp_key("team").await;
    let tools = ramen_testkit::eventually("the stable pod serves the new key", MINUTE, || {
        let (address, key) = (stable[0].mcp_address.clone(), key.clone());
        async move { tools_list(&address, &key, Duration::from_secs(5)).await }
    })
    .await;
    assert!(tools.iter().any(|t| t == "notes.add"), "{tools:?}");
    for track in ["worker", "worker-canary"] {
        let deployment = double.get("apps/v1", "Deployment", NAMESPACE, track).unwrap();
        let commit = &deployment["spec"]["template"]["metadata"]["annotations"]["ramen.dev/commit"];
        assert_eq!(commit, &serde_json::json!(repo.head()), "{track} runs the deployed commit");
        assert_eq!(deployment["status"]["readyReplicas"], 1, "{track}: {}", deployment["status"]);
    }

    // A second deploy (a new tool) rolls both tracks in place; a rollback is deploying the
    // older commit again, and the same pods' Deployments go back to it.
    let first = repo.head();
    let echo = repo.branch("echo", extra_tool);
    let id = start(&world, &client, "team", "echo").await;
    let job = job_when(&client, &world.admin, &id, "the second deploy", 3 * MINUTE, terminal).await;
    assert_eq!(job.state(), common::JobState::Succeeded, "{:?}", summary(&job));
    let tools = stable_tools(&world, &key).await;
    assert!(tools.contains(&"notes.echo".to_owned()), "{tools:?}");
    assert_eq!(commit_of(&double, "worker"), echo);
    let id = start(&world, &client, "team", &first).await;
    let job = job_when(&client, &world.admin, &id, "the rollback", 3 * MINUTE, terminal).await;
    assert_eq!(job.state(), common::JobState::Succeeded, "{:?}", summary(&job));
    let tools = stable_tools(&world, &key).await;
    assert!(
        !tools.contains(&"notes.echo".to_owned()) && tools.contains(&"notes.add".to_owned()),
        "{tools:?}"
    );
    assert_eq!(commit_of(&double, "worker"), first);
    double.shutdown().await;
}

fn commit_of(double: &KubeDouble, track: &str) -> String {
    let deployment = double.get("apps/v1", "Deployment", NAMESPACE, track).unwrap();
    let commit = &deployment["spec"]["template"]["metadata"]["annotations"]["ramen.dev/commit"];
    commit.as_str().unwrap_or_default().to_owned()
}

/// The tools the stable pod lists now (once it is the only, ready one).
async fn stable_tools(world: &World, key: &str) -> Vec<String> {
    ramen_testkit::eventually("one ready stable pod lists its tools", MINUTE, || async {
        let stable = world.workers("team", "eu1", common::Track::Worker).await;
        let [worker] = stable.as_slice() else { return Err(format!("{stable:?}")) };
        tools_list(&worker.mcp_address, key, Duration::from_secs(5)).await
    })
    .await
}

#[tokio::test]
async fn an_unschedulable_canary_on_a_kubernetes_zone_is_named_in_the_job_and_stable_is_untouched()
{
    let double = KubeDouble::start().await.expect("the double starts");
    let kube_dir = tempfile::tempdir().unwrap();
    let world = world_on(&double, kube_dir.path()).await;
    let mut settings = fast(&world.deployer_config());
    settings.rollout_timeout = Duration::from_secs(4);
    let node = world.deployer_with(world.deployer_config(), settings).await;
    let client = client(&node).await;
    // No requirements: the environment builder pod is not part of this test.
    let repo = Repo::hello();
    repo.branch("no-requirements", |r| {
        std::fs::remove_file(r.path().join("requirements.txt")).unwrap();
    });
    gcp_zone_and_group(&world, &client, &repo).await;

    double.set_deployment_pod_behaviour(
        NAMESPACE,
        "worker-canary",
        PodBehaviour::Unschedulable {
            message:
                "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
                    .into(),
        },
    );
    let id = start(&world, &client, "team", "no-requirements").await;
    let job = job_when(&client, &world.admin, &id, "the deploy ends", 3 * MINUTE, terminal).await;
    assert_eq!(job.state(), common::JobState::Failed, "{:?}", summary(&job));
    let write = step(&job, "eu1", DeployStep::WriteConfig);
    assert_eq!(write.status(), StepStatus::Succeeded, "{:?}", summary(&job));
    let canary = step(&job, "eu1", DeployStep::Canary);
    assert_eq!(canary.status(), StepStatus::Failed, "{:?}", summary(&job));
    let stuck = format!("{:?} {}", canary.stuck, canary.error);
    assert!(stuck.contains("worker-canary-"), "the pod is named: {stuck}");
    assert!(stuck.contains("Unschedulable"), "{stuck}");
    assert!(stuck.contains("node affinity"), "the scheduler's message: {stuck}");
    assert!(job.error.contains("eu1"), "{}", job.error);
    assert_eq!(step(&job, "eu1", DeployStep::Stable).status(), StepStatus::Skipped);
    assert_eq!(step(&job, "eu1", DeployStep::CanaryRollback).status(), StepStatus::Succeeded);

    let canary = double.get("apps/v1", "Deployment", NAMESPACE, "worker-canary").unwrap();
    assert_eq!(canary["spec"]["replicas"], 0, "the canary is scaled back to zero");
    assert!(
        double.get("apps/v1", "Deployment", NAMESPACE, "worker").is_none(),
        "stable was never touched"
    );
    let written = double.get("v1", "Secret", NAMESPACE, "ramen-written-config");
    assert!(written.is_some(), "the config was written to the zone's Secret");
}
