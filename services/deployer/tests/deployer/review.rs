//! The surface review (issue 30): a deploy that changes what the tools say waits with the
//! canary up and stable untouched until a group admin decides; approve serves the new surface,
//! reject (or a review nobody answers) scales the canary to zero; a deploy that changes no
//! surface never waits; an environment that allows changes only logs them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ramen_proto::common::v1::{self as common, DeployStep, StepStatus, Track};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use ramen_surface::{Kind, Surface};
use ramen_testkit::eventually;

use crate::repo::{RUG_PULL, Repo, readme_only, rewrite_description};
use crate::setup::{deploy, start, succeeded};
use crate::support::{MINUTE, World, as_actor, client, fast, job_when, step, summary, terminal};

type Client = DeployerServiceClient<ramen_clients::fakes::AsGateway>;

/// Group `team` on `repo`, environment `prod` on `local-a` with the surface setting left to
/// its default (which, for `prod`, is review).
async fn team_prod(world: &World, client: &Client, repo: &Repo) {
    world.zone("local-a").await;
    let group = pb::CreateGroupRequest {
        name: "team".into(),
        repo_url: repo.url(),
        default_ref: "main".into(),
        ..Default::default()
    };
    client.clone().create_group(as_actor(&world.admin, group)).await.expect("group created");
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        zones: vec!["local-a".into()],
        ..Default::default()
    };
    let env = client
        .clone()
        .create_environment(as_actor(&world.admin, env))
        .await
        .expect("environment created")
        .into_inner();
    assert_eq!(env.surface_changes(), pb::SurfaceChanges::Review, "prod reviews by default");
}

async fn stable_surface(world: &World, key: &str) -> Surface {
    let workers = world.workers("team", "local-a", Track::Worker).await;
    let worker = workers.first().expect("a stable worker");
    ramen_deployer::jobs::surface(&worker.mcp_address, key, MINUTE).await.expect("stable answers")
}

fn description(surface: &Surface, tool: &str) -> String {
    let item = surface.item(Kind::Tool, tool).unwrap_or_else(|| panic!("{tool} listed"));
    item["description"].as_str().unwrap_or_default().to_owned()
}

fn in_review(job: &pb::DeployJob) -> bool {
    job.state() == common::JobState::Review || terminal(job)
}

async fn decide(
    world: &World,
    client: &Client,
    job_id: &str,
    approve: bool,
    reason: &str,
) -> pb::DeployJob {
    let request = pb::DecideReviewRequest { job_id: job_id.into(), approve, reason: reason.into() };
    client
        .clone()
        .decide_review(as_actor(&world.admin, request))
        .await
        .expect("decided")
        .into_inner()
}

/// Calls stable's `tools/list` every 100 ms until stopped: how many were made, and the failures.
struct Caller {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(usize, Vec<String>)>,
}

impl Caller {
    async fn start(world: &World, key: &str) -> Caller {
        let workers = world.workers("team", "local-a", Track::Worker).await;
        let address = workers.first().expect("a stable worker").mcp_address.clone();
        let key = key.to_owned();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let calls = AtomicUsize::new(0);
            let mut failures = Vec::new();
            while !stopped.load(Ordering::SeqCst) {
                calls.fetch_add(1, Ordering::SeqCst);
                if let Err(err) = ramen_deployer::jobs::tools_list(&address, &key, MINUTE).await {
                    failures.push(err);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (calls.into_inner(), failures)
        });
        Caller { stop, task }
    }

    async fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("caller task")
    }
}

async fn audit_actions(world: &World) -> Vec<(String, String)> {
    let request = ramen_proto::auth::v1::QueryAuditRequest {
        group: "team".into(),
        action_prefix: "deploy.review".into(),
        ..Default::default()
    };
    let answer = world
        .auth
        .clone()
        .query_audit(as_actor(&world.admin, request))
        .await
        .expect("audit read")
        .into_inner();
    answer.entries.into_iter().map(|e| (e.action, e.actor)).collect()
}

#[tokio::test]
async fn a_rewritten_description_waits_for_review_and_approval_serves_it() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    let pulled = repo.branch("rug-pull", rewrite_description);
    let prose = repo.branch("prose", readme_only);
    team_prod(&world, &client, &repo).await;
    let key = world.mcp_key("team").await;

    // The first deploy has no stable surface to compare with: it does not wait.
    let first = deploy(&world, &client, "team", "v1").await;
    assert!(succeeded(&first), "{:?} {:?}", first.error, summary(&first));
    let smoke = step(&first, "local-a", DeployStep::ReloadSmoke);
    assert!(smoke.log.iter().any(|l| l.text.contains("nothing to compare")), "{:?}", smoke.log);
    assert!(first.review.is_none());
    let before = description(&stable_surface(&world, &key).await, "notes.add");
    assert_eq!(before, "Add two integers.");

    // A change outside the surface (the README) never waits.
    let job = deploy(&world, &client, "team", "prose").await;
    assert!(succeeded(&job), "{:?} {:?}", job.error, summary(&job));
    assert_eq!(job.commit, prose);
    assert!(job.review.is_none());
    assert_eq!(step(&job, "local-a", DeployStep::Review).outcome, "no surface change");

    // Only the description changes: the job waits in REVIEW with the canary up.
    let callers = Caller::start(&world, &key).await;
    let id = start(&world, &client, "team", "rug-pull").await;
    let job =
        job_when(&client, &world.admin, &id, "the job waits for review", 3 * MINUTE, in_review)
            .await;
    assert_eq!(job.state(), common::JobState::Review, "{:?} {:?}", job.error, summary(&job));
    assert_eq!(job.commit, pulled);
    let zone = &job.zones[0];
    assert_eq!(zone.surface_changes.len(), 1, "{:?}", zone.surface_changes);
    let change = &zone.surface_changes[0];
    assert_eq!(
        (change.kind.as_str(), change.name.as_str(), change.change.as_str()),
        ("tool", "notes.add", "changed")
    );
    assert_eq!(change.fields.len(), 1, "{:?}", change.fields);
    assert_eq!(change.fields[0].path, "description");
    assert_eq!(change.fields[0].before_json, "\"Add two integers.\"");
    assert_eq!(change.fields[0].after_json, serde_json::json!(RUG_PULL).to_string());
    let smoke = step(&job, "local-a", DeployStep::ReloadSmoke);
    let log: Vec<&str> = smoke.log.iter().map(|l| l.text.as_str()).collect();
    assert!(log.iter().any(|l| l.contains("~ tool notes.add: changed")), "{log:?}");
    assert!(log.iter().any(|l| l.contains(RUG_PULL)), "the new text is in the log: {log:?}");
    let review_step = step(&job, "local-a", DeployStep::Review);
    assert_eq!(review_step.status(), StepStatus::Running);
    assert!(review_step.log.iter().any(|l| l.text.contains(&format!("ramen jobs approve {id}"))));
    let review = job.review.clone().expect("a review is open");
    assert_eq!(review.decision(), pb::ReviewDecision::Pending);
    let (opened, expires) = (review.requested_at.unwrap(), review.expires_at.unwrap());
    assert_eq!(expires.seconds - opened.seconds, 24 * 3600, "the default review time");
    assert_eq!(step(&job, "local-a", DeployStep::Stable).status(), StepStatus::Pending);
    assert_eq!(world.workers("team", "local-a", Track::WorkerCanary).await.len(), 1, "canary up");
    assert_eq!(description(&stable_surface(&world, &key).await, "notes.add"), before);

    // A decision with a reason too long is refused by name; nothing changes.
    let long =
        pb::DecideReviewRequest { job_id: id.clone(), approve: true, reason: "x".repeat(501) };
    let refused = client.clone().decide_review(as_actor(&world.admin, long)).await.unwrap_err();
    assert!(refused.message().contains("reason"), "{refused:?}");

    // Stable answered every call while the job waited.
    let (calls, failures) = callers.finish().await;
    assert!(calls > 3 && failures.is_empty(), "{calls} calls to stable, failed: {failures:?}");

    // Approved: stable takes the new surface (its restart is the pipeline's STABLE step).
    let decided = decide(&world, &client, &id, true, "reviewed with the payments team").await;
    assert_eq!(decided.review.unwrap().decision(), pb::ReviewDecision::Approved);
    let job =
        job_when(&client, &world.admin, &id, "the approved deploy ends", 3 * MINUTE, terminal)
            .await;
    assert!(succeeded(&job), "{:?} {:?}", job.error, summary(&job));
    let review_step = step(&job, "local-a", DeployStep::Review);
    assert_eq!(review_step.status(), StepStatus::Succeeded);
    assert!(review_step.outcome.contains("approved by"), "{}", review_step.outcome);
    assert!(
        review_step.outcome.contains("reviewed with the payments team"),
        "{}",
        review_step.outcome
    );
    assert_eq!(description(&stable_surface(&world, &key).await, "notes.add"), RUG_PULL);
    // A second decision is refused: the review is closed.
    let again =
        pb::DecideReviewRequest { job_id: id.clone(), approve: false, reason: String::new() };
    let refused = client.clone().decide_review(as_actor(&world.admin, again)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition, "{refused:?}");
    let actions = audit_actions(&world).await;
    assert!(
        actions.contains(&("deploy.review.approve".to_owned(), world.admin.clone())),
        "{actions:?}"
    );

    // An environment that allows changes logs them and goes on: back to v1's description.
    let allow = pb::UpdateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        surface_changes: pb::SurfaceChanges::Allow as i32,
        ..Default::default()
    };
    let env = client
        .clone()
        .update_environment(as_actor(&world.admin, allow))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(env.surface_changes(), pb::SurfaceChanges::Allow);
    let job = deploy(&world, &client, "team", "v1").await;
    assert!(succeeded(&job), "{:?} {:?}", job.error, summary(&job));
    assert!(job.review.is_none());
    let outcome = &step(&job, "local-a", DeployStep::Review).outcome;
    assert!(outcome.contains("allows them without review"), "{outcome}");
    assert_eq!(description(&stable_surface(&world, &key).await, "notes.add"), before);
}

#[tokio::test]
async fn a_rejected_or_expired_review_scales_the_canary_to_zero_and_leaves_stable() {
    let world = World::start().await;
    let mut settings = fast(&world.deployer_config());
    // Long enough that the reject and the cancel below are always decided before it, on a
    // loaded machine too; the expiry case then waits it out.
    settings.review_timeout = Duration::from_secs(30);
    let node = world.deployer_with(world.deployer_config(), settings).await;
    let client = client(&node).await;
    let repo = Repo::hello();
    repo.branch("rug-pull", rewrite_description);
    team_prod(&world, &client, &repo).await;
    let key = world.mcp_key("team").await;
    let first = deploy(&world, &client, "team", "v1").await;
    assert!(succeeded(&first), "{:?} {:?}", first.error, summary(&first));
    let callers = Caller::start(&world, &key).await;

    let canary_at_zero = || async {
        eventually("the canary is at zero", MINUTE, || async {
            let canaries = world.workers("team", "local-a", Track::WorkerCanary).await;
            if canaries.is_empty() { Ok(()) } else { Err(canaries) }
        })
        .await;
    };

    // Rejected: the zone fails at REVIEW, the canary goes, stable keeps the old surface.
    let id = start(&world, &client, "team", "rug-pull").await;
    let job =
        job_when(&client, &world.admin, &id, "the job waits for review", 3 * MINUTE, in_review)
            .await;
    assert_eq!(job.state(), common::JobState::Review, "{:?}", summary(&job));
    decide(&world, &client, &id, false, "that description exfiltrates keys").await;
    let job =
        job_when(&client, &world.admin, &id, "the rejected deploy ends", 3 * MINUTE, terminal)
            .await;
    assert_eq!(job.state(), common::JobState::Failed, "{:?}", summary(&job));
    let review_step = step(&job, "local-a", DeployStep::Review);
    assert_eq!(review_step.status(), StepStatus::Failed);
    assert!(review_step.error.contains("rejected by"), "{}", review_step.error);
    assert!(
        review_step.error.contains("that description exfiltrates keys"),
        "{}",
        review_step.error
    );
    assert_eq!(step(&job, "local-a", DeployStep::Stable).status(), StepStatus::Skipped);
    assert_eq!(step(&job, "local-a", DeployStep::CanaryRollback).status(), StepStatus::Succeeded);
    canary_at_zero().await;
    assert_eq!(description(&stable_surface(&world, &key).await, "notes.add"), "Add two integers.");

    // Cancelled while waiting: the canary goes too, and the job ends CANCELLED.
    let id = start(&world, &client, "team", "rug-pull").await;
    let job =
        job_when(&client, &world.admin, &id, "the job waits for review", 3 * MINUTE, in_review)
            .await;
    assert_eq!(job.state(), common::JobState::Review, "{:?}", summary(&job));
    let cancel = pb::CancelJobRequest { job_id: id.clone(), reason: "wrong branch".into() };
    client.clone().cancel_job(as_actor(&world.admin, cancel)).await.expect("cancelled");
    let job =
        job_when(&client, &world.admin, &id, "the cancelled deploy ends", 3 * MINUTE, terminal)
            .await;
    assert_eq!(job.state(), common::JobState::Cancelled, "{:?}", summary(&job));
    assert_eq!(step(&job, "local-a", DeployStep::Review).status(), StepStatus::Cancelled);
    assert_eq!(step(&job, "local-a", DeployStep::CanaryRollback).status(), StepStatus::Succeeded);
    canary_at_zero().await;

    // Nobody decides: the review expires as a rejection.
    let id = start(&world, &client, "team", "rug-pull").await;
    let job =
        job_when(&client, &world.admin, &id, "the expired deploy ends", 3 * MINUTE, terminal).await;
    assert_eq!(job.state(), common::JobState::Failed, "{:?}", summary(&job));
    assert_eq!(job.review.as_ref().unwrap().decision(), pb::ReviewDecision::Expired);
    let review_step = step(&job, "local-a", DeployStep::Review);
    assert!(review_step.error.contains("expired"), "{}", review_step.error);
    canary_at_zero().await;
    assert_eq!(description(&stable_surface(&world, &key).await, "notes.add"), "Add two integers.");

    let (calls, failures) = callers.finish().await;
    assert!(calls > 3 && failures.is_empty(), "{calls} calls to stable, failed: {failures:?}");
    let actions = audit_actions(&world).await;
    assert!(
        actions.iter().any(|(a, who)| a == "deploy.review.reject" && *who == world.admin),
        "{actions:?}"
    );
    assert!(actions.iter().any(|(a, _)| a == "deploy.review.expire"), "{actions:?}");
}
