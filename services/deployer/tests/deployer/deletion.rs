//! Deleting an environment releases only the zones no other environment of the group uses;
//! deleting a group leaves nothing behind: placements, workers, bucket prefix, mirrors, keys,
//! secrets, memberships, records.

use ramen_proto::auth::v1 as apb;
use ramen_proto::common::v1::Track;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::GroupDeleted;
use ramen_proto::metadata;
use ramen_proto::zone::v1 as zpb;
use ramen_store::Query;
use ramen_testkit::eventually;

use crate::repo::Repo;
use crate::setup::{deploy, group_env, succeeded};
use crate::support::{MINUTE, World, as_actor, client, pids_under, summary};

async fn placement_zones(world: &World, group: &str) -> Vec<String> {
    let request = zpb::ListPlacementsRequest { group: group.into(), ..Default::default() };
    let answer = world
        .zones
        .clone()
        .list_placements(as_actor(metadata::ACTOR_DEPLOYER, request))
        .await
        .unwrap();
    answer.into_inner().placements.into_iter().map(|p| p.zone).collect()
}

#[tokio::test]
async fn deleting_an_environment_tears_down_only_the_zones_no_other_environment_uses() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a", "local-b"]).await;
    let dev = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "dev".into(),
        zones: vec!["local-a".into()],
        ..Default::default()
    };
    client.clone().create_environment(as_actor(&world.admin, dev)).await.unwrap();
    let job = deploy(&world, &client, "team", "main").await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert_eq!(placement_zones(&world, "team").await, vec!["local-a", "local-b"]);

    let request = pb::DeleteEnvironmentRequest { group: "team".into(), name: "prod".into() };
    let released = client
        .clone()
        .delete_environment(as_actor(&world.admin, request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(released.released_zones, vec!["local-b"]);
    eventually("prod and its zone are gone", 2 * MINUTE, || async {
        let get = pb::GetEnvironmentRequest { group: "team".into(), name: "prod".into() };
        let env = client.clone().get_environment(as_actor(&world.admin, get)).await;
        let zones = placement_zones(&world, "team").await;
        let pids = pids_under(&world.zones_dir().join("local-b"));
        if env.as_ref().is_err_and(|e| e.code() == tonic::Code::NotFound)
            && zones == ["local-a"]
            && pids.is_empty()
        {
            Ok(())
        } else {
            Err(format!(
                "env {:?}, placements {zones:?}, pids {pids:?}",
                env.map(|e| e.into_inner().deleting)
            ))
        }
    })
    .await;
    let jobs = client
        .clone()
        .list_jobs(as_actor(
            &world.admin,
            pb::ListJobsRequest {
                group: "team".into(),
                environment: "prod".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap();
    assert!(jobs.into_inner().jobs.is_empty(), "the environment's jobs went with it");
    assert!(
        !world.workers("team", "local-a", Track::Worker).await.is_empty(),
        "local-a still serves dev's group"
    );
    let list = client
        .clone()
        .list_environments(as_actor(&world.admin, pb::ListEnvironmentsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.environments.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), vec!["dev"]);
}

#[tokio::test]
async fn deleting_a_group_leaves_nothing_behind() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    let member = world.user("dev@example.com", false).await;
    let add = apb::AddMemberRequest {
        group: "team".into(),
        user_id: member.clone(),
        email: String::new(),
        role: apb::Role::Admin as i32,
    };
    world.auth.clone().add_member(as_actor(&world.admin, add)).await.unwrap();
    world.secret("team", "API_TOKEN", "s3cr3t").await;
    world.mcp_key("team").await;
    let job = deploy(&world, &client, "team", "main").await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    let mut events =
        world.observer.subscribe(&ramen_service::subject::<GroupDeleted>()).await.unwrap();

    // A group admin may not delete the group; a super admin may.
    let refused = client
        .clone()
        .delete_group(as_actor(&member, pb::DeleteGroupRequest { name: "team".into() }))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    let deletion = client
        .clone()
        .delete_group(as_actor(&world.admin, pb::DeleteGroupRequest { name: "team".into() }))
        .await
        .unwrap()
        .into_inner();
    let steps: Vec<&str> = deletion.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(steps, ["placements", "bucket_prefix", "auth", "records"]);
    let again = client
        .clone()
        .delete_group(as_actor(&world.admin, pb::DeleteGroupRequest { name: "team".into() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.started_at, deletion.started_at, "idempotent");
    let event = tokio::time::timeout(MINUTE, events.next()).await.unwrap().unwrap();
    assert_eq!(
        (event.payload.group.as_str(), event.payload.bucket_prefix.as_str()),
        ("team", "groups/team/")
    );

    eventually("the deletion finishes", 2 * MINUTE, || async {
        let get = pb::GetGroupDeletionRequest { name: "team".into() };
        match client.clone().get_group_deletion(as_actor(&world.admin, get)).await {
            Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(placement_zones(&world, "team").await.is_empty());
    assert!(pids_under(&world.zones_dir()).is_empty(), "no worker left running");
    assert!(
        world.base.blob.list("groups/team/").await.unwrap().is_empty(),
        "bucket prefix emptied"
    );
    assert!(!world.dir.path().join("deployer/mirrors/team").exists(), "git mirrors removed");
    for collection in ["deployer_groups", "deployer_environments", "deployer_deploy_jobs"] {
        let left = world.base.store.find(collection, &Query::new()).await.unwrap();
        assert!(left.is_empty(), "{collection}: {left:?}");
    }
    let secrets = world
        .auth
        .clone()
        .list_secrets(as_actor(
            &world.admin,
            apb::ListSecretsRequest { group: "team".into(), page: None },
        ))
        .await;
    assert_eq!(secrets.unwrap_err().code(), tonic::Code::NotFound, "auth forgot the group");
    let user = world
        .auth
        .clone()
        .get_user(as_actor(&world.admin, apb::GetUserRequest { user_id: member }))
        .await
        .unwrap()
        .into_inner();
    assert!(user.memberships.is_empty(), "{:?}", user.memberships);

    // The name is free again.
    let create =
        pb::CreateGroupRequest { name: "team".into(), repo_url: repo.url(), ..Default::default() };
    client.clone().create_group(as_actor(&world.admin, create)).await.expect("recreated");
}
