//! The canary pipeline on the local provider: every step recorded, stable serving the tools,
//! a broken ref leaving stable as it was with the canary at zero, and rollback.

use futures::StreamExt;
use ramen_proto::common::v1::{self as common, DeployStep, StepStatus, Track};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::watch_job_response::Update;
use ramen_proto::metadata;
use ramen_proto::zone::v1 as zpb;
use ramen_testkit::eventually;

use crate::repo::{Repo, broken_import, broken_requirements, extra_tool};
use crate::setup::{deploy, group_env, succeeded};
use crate::support::{MINUTE, World, as_actor, client, step, summary};

const STEPS: [DeployStep; 6] = [
    DeployStep::Sync,
    DeployStep::WriteConfig,
    DeployStep::Canary,
    DeployStep::ReloadSmoke,
    DeployStep::Review,
    DeployStep::Stable,
];

async fn stable_tools(world: &World, group: &str, zone: &str, key: &str) -> Vec<String> {
    let workers = world.workers(group, zone, Track::Worker).await;
    let worker = workers.first().unwrap_or_else(|| panic!("a stable worker in {zone}"));
    let mut tools = ramen_deployer::jobs::tools_list(&worker.mcp_address, key, MINUTE)
        .await
        .expect("stable answers tools/list");
    tools.sort();
    tools
}

#[tokio::test]
async fn a_two_zone_deploy_records_all_six_steps_and_serves_the_tools() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a", "local-b"]).await;
    let key = world.mcp_key("team").await;

    let request = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let job_id = client
        .clone()
        .start_deploy(as_actor(&world.admin, request))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let mut watch = client
        .clone()
        .watch_job(as_actor(&world.admin, pb::WatchJobRequest { job_id: job_id.clone() }))
        .await
        .unwrap()
        .into_inner();
    let mut updates = Vec::new();
    while let Some(update) =
        tokio::time::timeout(3 * MINUTE, watch.next()).await.expect("watch ends in time")
    {
        updates.push(update.unwrap().update.unwrap());
    }
    assert!(matches!(updates.first(), Some(Update::Snapshot(_))), "{:?}", updates.first());
    let Some(Update::State(last)) = updates.last() else {
        panic!("last update is a state: {:?}", updates.last())
    };
    assert_eq!(last.state(), common::JobState::Succeeded, "{}", last.error);
    assert!(updates.iter().any(|u| matches!(u, Update::Log(_))));

    let job = client
        .clone()
        .get_job(as_actor(&world.admin, pb::GetJobRequest { job_id: job_id.clone() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(job.commit, repo.head());
    assert_eq!(job.attempt, 1);
    for zone in ["local-a", "local-b"] {
        for s in STEPS {
            let run = step(&job, zone, s);
            assert_eq!(run.status(), StepStatus::Succeeded, "{zone} {s:?}: {run:?}");
            let (start, end) = (run.started_at.unwrap(), run.ended_at.unwrap());
            assert!((end.seconds, end.nanos) >= (start.seconds, start.nanos), "{zone} {s:?}");
            assert!(!run.outcome.is_empty(), "{zone} {s:?} has an outcome");
        }
        assert!(!step(&job, zone, DeployStep::Sync).log.is_empty());
        assert!(
            step(&job, zone, DeployStep::ReloadSmoke).outcome.contains("2 packages"),
            "{:?}",
            step(&job, zone, DeployStep::ReloadSmoke)
        );
        let tools = stable_tools(&world, "team", zone, &key).await;
        assert!(
            tools.contains(&"notes.add".to_owned())
                && tools.contains(&"weather.forecast".to_owned()),
            "{tools:?}"
        );
    }
    // One zone uploaded the snapshot, the other found it there.
    let outcomes: Vec<&str> = ["local-a", "local-b"]
        .iter()
        .map(|z| step(&job, z, DeployStep::Sync).outcome.as_str())
        .collect();
    assert_eq!(outcomes.iter().filter(|o| o.starts_with("uploaded")).count(), 1, "{outcomes:?}");

    // The smoke key was for the deploy only.
    let smoke = ramen_deployer::jobs::smoke_key(&crate::support::SECRETS_KEY, &job_id);
    let worker = &world.workers("team", "local-a", Track::Worker).await[0];
    assert!(ramen_deployer::jobs::tools_list(&worker.mcp_address, &smoke, MINUTE).await.is_err());

    // Package reports stored per zone; the environment row carries the result.
    let packages = world
        .zones
        .clone()
        .list_packages(as_actor(
            metadata::ACTOR_DEPLOYER,
            zpb::ListPackagesRequest { group: "team".into(), ..Default::default() },
        ))
        .await
        .unwrap()
        .into_inner()
        .packages;
    assert_eq!(packages.len(), 4, "{packages:?}");
    let env = client
        .clone()
        .get_environment(as_actor(
            &world.admin,
            pb::GetEnvironmentRequest { group: "team".into(), name: "prod".into() },
        ))
        .await
        .unwrap()
        .into_inner();
    let last = env.last_deploy.unwrap();
    assert_eq!(
        (last.job_id.as_str(), last.outcome(), last.commit.as_str()),
        (job_id.as_str(), common::JobState::Succeeded, repo.head().as_str())
    );
    let metrics = node.platform.metrics.encode();
    for series in [
        "ramen_deploy_jobs_created_total{outcome=\"created\"} 1",
        "ramen_deploy_jobs_finished_total{state=\"succeeded\"} 1",
        "ramen_deploy_job_duration_seconds_count{state=\"succeeded\"} 1",
        "ramen_deploy_jobs_active 0",
        "ramen_deployer_heartbeat_errors_total 0",
        // Each step of the pipeline ran once in each of the two zones, and its time was observed.
        "ramen_deploy_step_duration_seconds_count{step=\"sync\",status=\"succeeded\"} 2",
        "ramen_deploy_step_duration_seconds_count{step=\"canary\",status=\"succeeded\"} 2",
        "ramen_deploy_step_duration_seconds_count{step=\"stable\",status=\"succeeded\"} 2",
    ] {
        assert!(metrics.contains(series), "{series} in {metrics}");
    }
    // Registered; what they read is the consumer's backlog (`Bus::consumer_backlog`, tested
    // in the bus conformance suite).
    assert!(metrics.contains("# TYPE ramen_deploy_queue_pending gauge"), "{metrics}");
}

#[tokio::test]
async fn a_broken_ref_leaves_stable_serving_and_the_canary_at_zero_then_rollback() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    let v2 = repo.branch("v2", extra_tool);
    let import_error = repo.branch("import-error", broken_import);
    let bad_requirements = repo.branch("bad-requirements", broken_requirements);
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    let key = world.mcp_key("team").await;

    let good = deploy(&world, &client, "team", "v2").await;
    assert!(succeeded(&good), "{:?} {:?}", good.error, summary(&good));
    assert_eq!(good.commit, v2);
    let before = stable_tools(&world, "team", "local-a", &key).await;
    assert!(before.contains(&"notes.echo".to_owned()), "{before:?}");

    // A requirement that cannot be installed fails the deploy in WRITE_CONFIG, where the
    // environment is built once for the deploy: before any canary restarts, naming it.
    let job = deploy(&world, &client, "team", "bad-requirements").await;
    assert_eq!(job.state(), common::JobState::Failed, "{:?}", summary(&job));
    assert_eq!(&job.commit, &bad_requirements);
    let write = step(&job, "local-a", DeployStep::WriteConfig);
    assert_eq!(write.status(), StepStatus::Failed, "{:?}", summary(&job));
    assert!(write.error.contains("ramen-no-such-package-anywhere==9.9.9"), "{}", write.error);
    assert!(write.log.iter().any(|l| l.text.contains("ERROR")), "pip's output in the job log");
    for later in [DeployStep::Canary, DeployStep::ReloadSmoke, DeployStep::Stable] {
        assert_eq!(step(&job, "local-a", later).status(), StepStatus::Skipped, "{later:?}");
    }
    assert_eq!(stable_tools(&world, "team", "local-a", &key).await, before, "stable untouched");

    for (git_ref, commit, needle) in
        [("import-error", &import_error, "ramen_no_such_module_anywhere")]
    {
        let job = deploy(&world, &client, "team", git_ref).await;
        assert_eq!(job.state(), common::JobState::Failed, "{git_ref}: {:?}", summary(&job));
        assert_eq!(&job.commit, commit);
        // The canary fails to become ready (its start loads the commit), or its reload fails.
        let failed: Vec<&pb::StepRun> = [DeployStep::Canary, DeployStep::ReloadSmoke]
            .into_iter()
            .map(|s| step(&job, "local-a", s))
            .filter(|s| s.status() == StepStatus::Failed)
            .collect();
        assert_eq!(failed.len(), 1, "{git_ref}: {:?}", summary(&job));
        let text = format!("{} {:?}", failed[0].error, failed[0].stuck);
        assert!(text.contains(needle), "{git_ref}: {text}");
        assert!(job.error.contains("local-a"), "{}", job.error);
        assert_eq!(step(&job, "local-a", DeployStep::Stable).status(), StepStatus::Skipped);
        assert_eq!(
            step(&job, "local-a", DeployStep::CanaryRollback).status(),
            StepStatus::Succeeded
        );
        eventually("the canary is at zero", MINUTE, || async {
            let canaries = world.workers("team", "local-a", Track::WorkerCanary).await;
            if canaries.is_empty() { Ok(()) } else { Err(canaries) }
        })
        .await;
        assert_eq!(
            stable_tools(&world, "team", "local-a", &key).await,
            before,
            "{git_ref}: stable untouched"
        );
    }

    // Rollback is deploying the older ref.
    let rollback = deploy(&world, &client, "team", "v1").await;
    assert!(succeeded(&rollback), "{:?} {:?}", rollback.error, summary(&rollback));
    let after = stable_tools(&world, "team", "local-a", &key).await;
    assert!(
        !after.contains(&"notes.echo".to_owned()) && after.contains(&"notes.add".to_owned()),
        "{after:?}"
    );
    let env = client
        .clone()
        .get_environment(as_actor(
            &world.admin,
            pb::GetEnvironmentRequest { group: "team".into(), name: "prod".into() },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(env.last_deploy.unwrap().git_ref, "v1");
}
