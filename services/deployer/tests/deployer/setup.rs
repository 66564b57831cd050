//! A group with an environment, ready to deploy.

use ramen_clients::fakes::AsGateway;
use ramen_proto::common::v1 as common;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;

use crate::support::{MINUTE, World, as_actor, job_when, terminal};

/// Zones created, group `group` on `repo_url`, environment `prod` on `zones` at `main`, which
/// lets surface changes through (the pipeline's tests change tools between deploys; the review
/// has its own tests, `review.rs`).
pub async fn group_env(
    world: &World,
    client: &DeployerServiceClient<AsGateway>,
    group: &str,
    repo_url: &str,
    zones: &[&str],
) {
    for zone in zones {
        world.zone(zone).await;
    }
    let create = pb::CreateGroupRequest {
        name: group.into(),
        repo_url: repo_url.into(),
        default_ref: "main".into(),
        ..Default::default()
    };
    client.clone().create_group(as_actor(&world.admin, create)).await.expect("group created");
    let env = pb::CreateEnvironmentRequest {
        group: group.into(),
        name: "prod".into(),
        zones: zones.iter().map(|z| (*z).to_owned()).collect(),
        surface_changes: pb::SurfaceChanges::Allow as i32,
        ..Default::default()
    };
    client
        .clone()
        .create_environment(as_actor(&world.admin, env))
        .await
        .expect("environment created");
}

pub async fn start(
    world: &World,
    client: &DeployerServiceClient<AsGateway>,
    group: &str,
    git_ref: &str,
) -> String {
    let request = pb::StartDeployRequest {
        group: group.into(),
        environment: "prod".into(),
        git_ref: git_ref.into(),
        idempotency_key: String::new(),
    };
    client
        .clone()
        .start_deploy(as_actor(&world.admin, request))
        .await
        .expect("deploy started")
        .into_inner()
        .job_id
}

/// Deploys `git_ref` and waits for the job to end.
pub async fn deploy(
    world: &World,
    client: &DeployerServiceClient<AsGateway>,
    group: &str,
    git_ref: &str,
) -> pb::DeployJob {
    let id = start(world, client, group, git_ref).await;
    job_when(client, &world.admin, &id, "the deploy ends", 3 * MINUTE, terminal).await
}

pub fn succeeded(job: &pb::DeployJob) -> bool {
    job.state() == common::JobState::Succeeded
}
