//! A deploy to a Kubernetes zone, with the real zone-manager's Kubernetes provider against
//! the played Kubernetes API (`ramen-kube-double`): its pods are simulated, so what is tested
//! here is the pipeline's side of a canary that never schedules: the job names the pod and
//! the scheduler's reason, the canary is scaled back to zero, stable is never touched.

use std::time::Duration;

use ramen_config::{ClusterAccess, ClusterConfig};
use ramen_kube_double::{KubeDouble, PodBehaviour};
use ramen_proto::common::v1::{self as common, DeployStep, StepStatus};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::zone::v1 as zpb;

use crate::repo::Repo;
use crate::setup::start;
use crate::support::{MINUTE, World, as_actor, client, fast, job_when, step, summary, terminal};

const NAMESPACE: &str = "ramen-team-eu1";

#[tokio::test]
async fn an_unschedulable_canary_on_a_kubernetes_zone_is_named_in_the_job_and_stable_is_untouched()
{
    let double = KubeDouble::start().await.expect("the double starts");
    let kube_dir = tempfile::tempdir().unwrap();
    let kubeconfig = kube_dir.path().join("kubeconfig");
    double.write_kubeconfig(&kubeconfig, "gke").unwrap();
    let path = kubeconfig.display().to_string();
    let world = World::start_with(move |config| {
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
    })
    .await;
    let mut settings = fast(&world.deployer_config());
    settings.rollout_timeout = Duration::from_secs(4);
    let node = world.deployer_with(world.deployer_config(), settings).await;
    let client = client(&node).await;

    let zone = zpb::CreateZoneRequest {
        name: "eu1".into(),
        provider: common::Provider::Gcp as i32,
        region: "europe-west1-b".into(),
        ..Default::default()
    };
    let as_deployer = as_actor(ramen_proto::metadata::ACTOR_DEPLOYER, zone);
    world.zones.clone().create_zone(as_deployer).await.expect("gcp zone");
    // No requirements: the environment builder pod is not part of this test.
    let repo = Repo::hello();
    repo.branch("no-requirements", |r| {
        std::fs::remove_file(r.path().join("requirements.txt")).unwrap();
    });
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
        ..Default::default()
    };
    client.clone().create_environment(as_actor(&world.admin, env)).await.expect("environment");

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
