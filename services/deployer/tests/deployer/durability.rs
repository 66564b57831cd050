//! Jobs as durable work: a crashed deployer's job resumed by another without redoing done
//! zones, redelivery exhausted → dead letter → replay, cancel wins, drain in both modes,
//! a double-submitted deploy deduplicated.

use std::time::Duration;

use ramen_config::DrainMode;
use ramen_proto::common::v1::{DeployStep, JobState, StepStatus, Track};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::DeployWork;
use ramen_testkit::eventually;

use crate::repo::Repo;
use crate::setup::{group_env, start, succeeded};
use crate::support::{MINUTE, World, as_actor, client, fast, job_when, step, summary, terminal};

fn started_at(job: &pb::DeployJob, zone: &str, s: DeployStep) -> Option<prost_types::Timestamp> {
    step(job, zone, s).started_at
}

fn running(job: &pb::DeployJob, zone: &str, s: DeployStep) -> bool {
    job.zones.iter().any(|z| z.zone == zone) && step(job, zone, s).status() == StepStatus::Running
}

#[tokio::test]
async fn a_crashed_deployer_is_resumed_by_another_without_redoing_done_zones() {
    let world = World::start().await;
    let config = world.deployer_config();
    let mut settings = fast(&config);
    settings.zone_parallelism = 1;
    let first = world.deployer_with(config.clone(), settings.clone()).await;
    let c1 = client(&first).await;
    let repo = Repo::hello();
    group_env(&world, &c1, "team", &repo.url(), &["local-a", "local-b"]).await;
    let id = start(&world, &c1, "team", "main").await;

    // Zones go one at a time: crash while the second one restarts its canary.
    let at_crash =
        job_when(&c1, &world.admin, &id, "the second zone reaches its canary", 3 * MINUTE, |j| {
            let zones = [&j.zones[0].zone, &j.zones[1].zone];
            j.zones[0].status() == StepStatus::Succeeded && running(j, zones[1], DeployStep::Canary)
                || j.zones[1].status() == StepStatus::Succeeded
                    && running(j, zones[0], DeployStep::Canary)
        })
        .await;
    first.started.deployer.crash();
    let done_zone =
        at_crash.zones.iter().find(|z| z.status() == StepStatus::Succeeded).unwrap().zone.clone();
    let resumed_zone = at_crash.zones.iter().find(|z| z.zone != done_zone).unwrap().zone.clone();

    let second = world.deployer_with(config, settings).await;
    let c2 = client(&second).await;
    let job =
        job_when(&c2, &world.admin, &id, "the job resumes and ends", 3 * MINUTE, terminal).await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert!(job.attempt >= 2, "redelivered: attempt {}", job.attempt);
    for s in [
        DeployStep::Sync,
        DeployStep::WriteConfig,
        DeployStep::Canary,
        DeployStep::ReloadSmoke,
        DeployStep::Stable,
    ] {
        assert_eq!(
            started_at(&job, &done_zone, s),
            started_at(&at_crash, &done_zone, s),
            "{done_zone} {s:?} not redone"
        );
    }
    for s in [DeployStep::Sync, DeployStep::WriteConfig] {
        assert_eq!(
            started_at(&job, &resumed_zone, s),
            started_at(&at_crash, &resumed_zone, s),
            "{resumed_zone} {s:?} not redone"
        );
    }
    assert_ne!(
        started_at(&job, &resumed_zone, DeployStep::Canary),
        started_at(&at_crash, &resumed_zone, DeployStep::Canary),
        "the interrupted step ran again"
    );
}

#[tokio::test]
async fn exhausted_redeliveries_park_the_job_and_a_replay_resumes_it() {
    let mut world = World::start().await;
    let mut config = world.deployer_config();
    config.nats.max_deliver = 2;
    let node = world.deployer_with(config.clone(), fast(&config)).await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    world.stop_zone_manager().await;

    let id = start(&world, &client, "team", "main").await;
    let parked =
        job_when(&client, &world.admin, &id, "the job is dead-lettered", 2 * MINUTE, terminal)
            .await;
    assert_eq!(parked.state(), JobState::DeadLettered, "{} {:?}", parked.error, summary(&parked));
    assert!(
        parked.error.contains("max deliveries (2) exhausted")
            && parked.error.contains("zone-manager unavailable"),
        "{}",
        parked.error
    );
    let letters = client
        .clone()
        .list_dead_letters(as_actor(&world.admin, pb::ListDeadLettersRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .dead_letters;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let letter = &letters[0];
    assert_eq!(
        (letter.job_id.as_str(), letter.group.as_str(), letter.deliveries),
        (id.as_str(), "team", 2)
    );
    assert!(letter.reason.contains("max deliveries"), "{}", letter.reason);
    assert!(letter.payload_json.contains(&id));
    let member = world.user("dev@example.com", false).await;
    let refused = client
        .clone()
        .list_dead_letters(as_actor(&member, pb::ListDeadLettersRequest::default()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");

    world.start_zone_manager().await;
    let replay = pb::ReplayDeadLetterRequest { sequence: letter.sequence };
    let replayed = client
        .clone()
        .replay_dead_letter(as_actor(&world.admin, replay))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(replayed.job_id, id);
    let job =
        job_when(&client, &world.admin, &id, "the replayed job ends", 3 * MINUTE, terminal).await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert_eq!(
        started_at(&job, "local-a", DeployStep::Sync),
        started_at(&parked, "local-a", DeployStep::Sync),
        "sync not redone"
    );
    let letters = client
        .clone()
        .list_dead_letters(as_actor(&world.admin, pb::ListDeadLettersRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .dead_letters;
    assert!(letters.is_empty(), "{letters:?}");
}

#[tokio::test]
async fn cancel_wins_over_a_resumable_failure_and_stops_a_running_job() {
    let mut world = World::start().await;
    let config = world.deployer_config();
    let mut settings = fast(&config);
    settings.retry_delay = Duration::from_secs(30);
    let node = world.deployer_with(config, settings).await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;

    // Resumable (the zone-manager is down, the retry waits): the cancel is final at once.
    world.stop_zone_manager().await;
    let id = start(&world, &client, "team", "main").await;
    job_when(&client, &world.admin, &id, "the job is resumable", MINUTE, |j| {
        j.state() == JobState::FailedResumable
    })
    .await;
    let cancel = pb::CancelJobRequest { job_id: id.clone(), reason: "wrong ref".into() };
    let cancelled = client
        .clone()
        .cancel_job(as_actor(&world.admin, cancel.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cancelled.state(), JobState::Cancelled);
    assert!(cancelled.error.contains("wrong ref"), "{}", cancelled.error);
    let metrics = node.platform.metrics.encode();
    let counted = "ramen_deploy_jobs_finished_total{state=\"cancelled\"} 1";
    assert!(metrics.contains(counted), "a job cancelled while nobody ran it counts: {metrics}");
    world.start_zone_manager().await;
    let again =
        client.clone().cancel_job(as_actor(&world.admin, cancel)).await.unwrap().into_inner();
    assert_eq!(again.state(), JobState::Cancelled, "idempotent");

    // Running: the holder stops at the next step boundary and scales the canary back.
    let id = start(&world, &client, "team", "main").await;
    job_when(&client, &world.admin, &id, "the canary restarts", 2 * MINUTE, |j| {
        running(j, "local-a", DeployStep::Canary)
    })
    .await;
    let cancel = pb::CancelJobRequest { job_id: id.clone(), reason: String::new() };
    let flagged = client
        .clone()
        .cancel_job(as_actor(&world.admin, cancel.clone()))
        .await
        .unwrap()
        .into_inner();
    assert!(flagged.cancel_requested);
    let job =
        job_when(&client, &world.admin, &id, "the running job stops", 2 * MINUTE, terminal).await;
    assert_eq!(job.state(), JobState::Cancelled, "{:?}", summary(&job));
    assert_eq!(step(&job, "local-a", DeployStep::Stable).status(), StepStatus::Cancelled);
    assert_eq!(step(&job, "local-a", DeployStep::CanaryRollback).status(), StepStatus::Succeeded);
    eventually("the canary is at zero", MINUTE, || async {
        let canaries = world.workers("team", "local-a", Track::WorkerCanary).await;
        if canaries.is_empty() { Ok(()) } else { Err(canaries) }
    })
    .await;
    let finished =
        client.clone().cancel_job(as_actor(&world.admin, cancel)).await.unwrap().into_inner();
    assert_eq!(finished.state(), JobState::Cancelled);
}

#[tokio::test]
async fn complete_drain_finishes_the_held_job() {
    let world = World::start().await;
    let mut config = world.deployer_config();
    config.drain.timeout = Duration::from_secs(180);
    let node = world.deployer_with(config.clone(), fast(&config)).await;
    let c1 = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &c1, "team", &repo.url(), &["local-a"]).await;
    let id = start(&world, &c1, "team", "main").await;
    job_when(&c1, &world.admin, &id, "the deployer runs the job", MINUTE, |j| {
        j.state() == JobState::Running
            && j.zones[0].steps.iter().any(|s| s.status() == StepStatus::Running)
    })
    .await;
    node.stop().await; // returns once the drain is over
    let job = world.base.store.get("deployer_deploy_jobs", &id).await.unwrap().unwrap().doc;
    assert_eq!(job["state"], "succeeded", "finished during the drain: {job}");
    assert_eq!(job["attempt"], 1, "not handed back");
    assert_eq!(job["holder"], "", "lease released");
}

async fn handed_back(mode: DrainMode, cap: Duration, needle: &str) {
    let world = World::start().await;
    let config = world.deployer_config();
    let mut settings = fast(&config);
    settings.drain_mode = mode;
    settings.drain_cap = cap;
    let node = world.deployer_with(config.clone(), settings.clone()).await;
    let c1 = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &c1, "team", &repo.url(), &["local-a"]).await;
    let id = start(&world, &c1, "team", "main").await;
    let before = job_when(&c1, &world.admin, &id, "the canary restarts", 2 * MINUTE, |j| {
        running(j, "local-a", DeployStep::Canary)
    })
    .await;
    node.stop().await;
    let store = world.base.store.clone();
    let doc = eventually("the job is handed back", MINUTE, || {
        let store = store.clone();
        let id = id.clone();
        async move {
            let doc = store.get("deployer_deploy_jobs", &id).await.unwrap().unwrap().doc;
            if doc["state"] == "failed_resumable" { Ok(doc) } else { Err(doc["state"].clone()) }
        }
    })
    .await;
    assert!(doc["error"].as_str().unwrap().contains(needle), "{}", doc["error"]);

    let resumer = world.deployer_with(config, fast(&world.deployer_config())).await;
    let c2 = client(&resumer).await;
    let job =
        job_when(&c2, &world.admin, &id, "another deployer resumes it", 3 * MINUTE, terminal).await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert!(job.attempt >= 2);
    let canary = step(&job, "local-a", DeployStep::Canary);
    assert!(canary.log.iter().any(|l| l.text.contains("resumes here")), "{canary:?}");
    assert_eq!(
        started_at(&job, "local-a", DeployStep::WriteConfig),
        started_at(&before, "local-a", DeployStep::WriteConfig)
    );
}

#[tokio::test]
async fn interrupt_drain_checkpoints_at_once_and_another_deployer_resumes() {
    handed_back(DrainMode::Interrupt, Duration::from_secs(600), "interrupt mode").await;
}

#[tokio::test]
async fn complete_drain_past_its_cap_checkpoints_and_hands_back() {
    handed_back(DrainMode::Complete, Duration::from_millis(200), "drain timeout").await;
}

#[tokio::test]
async fn a_double_submitted_deploy_is_one_job() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "team", &repo.url(), &["local-a"]).await;
    let request = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        git_ref: String::new(),
        idempotency_key: "click-1".into(),
    };
    let first = client
        .clone()
        .start_deploy(as_actor(&world.admin, request.clone()))
        .await
        .unwrap()
        .into_inner();
    let second =
        client.clone().start_deploy(as_actor(&world.admin, request)).await.unwrap().into_inner();
    assert!(!first.deduplicated);
    assert_eq!((second.job_id.as_str(), second.deduplicated), (first.job_id.as_str(), true));

    // Another deploy of the environment while this one is live is refused, naming it.
    let other = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let refused = client.clone().start_deploy(as_actor(&world.admin, other)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(refused.message().contains(&first.job_id), "{}", refused.message());

    // The work item itself is deduplicated by JetStream (`<job id>.<claim>` = Nats-Msg-Id).
    let work = DeployWork {
        job_id: first.job_id.clone(),
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let options = ramen_bus::PublishOptions::with_msg_id(format!("{}.0", first.job_id));
    let ack = world
        .observer
        .publish(&ramen_service::subject::<DeployWork>(), &work, options)
        .await
        .unwrap();
    assert!(ack.duplicate);

    let job =
        job_when(&client, &world.admin, &first.job_id, "the job ends", 3 * MINUTE, terminal).await;
    assert!(succeeded(&job), "{} {:?}", job.error, summary(&job));
    assert_eq!(job.attempt, 1);
    let list = pb::ListJobsRequest { group: "team".into(), ..Default::default() };
    let jobs =
        client.clone().list_jobs(as_actor(&world.admin, list)).await.unwrap().into_inner().jobs;
    assert_eq!(jobs.len(), 1);
    assert!(jobs[0].zones[0].steps.iter().all(|s| s.log.is_empty()), "lists leave logs out");
}
