//! The pipeline on its ports alone: real NATS, store and blob directory, but auth, the
//! zone-manager, the worker nodes and the smoke test as the in-memory fakes of
//! `ramen-clients` — what each step asks of them, in which order, and what it does not ask.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ramen_bus::auth::Role;
use ramen_bus::testing::OperatorNats;
use ramen_clients::fakes::{FakeAuth, FakeNodes, FakeZones, Rollout, test_channel};
use ramen_deployer::{Ports, Smoke};
use ramen_lifecycle::Shutdown;
use ramen_proto::common::v1::{self as common, JobState, Track};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::deployer_service_client::DeployerServiceClient;
use ramen_service::Platform;
use ramen_testkit::eventually;

use crate::repo::Repo;
use crate::support::{as_user, fast, test_config};

/// The smoke test as a fake: the tools it answers, and every (address, key) it was asked with.
#[derive(Default)]
struct FakeSmoke {
    asked: Mutex<Vec<(String, String)>>,
}

#[async_trait::async_trait]
impl Smoke for FakeSmoke {
    async fn surface(
        &self,
        address: &str,
        key: &str,
        _timeout: Duration,
    ) -> Result<ramen_surface::Surface, String> {
        self.asked.lock().push((address.to_owned(), key.to_owned()));
        let tool = serde_json::json!({"name": "notes.add", "inputSchema": {"type": "object"}});
        ramen_surface::Surface::from_lists(&[tool], &[], &[], &[])
    }
}

struct Fakes {
    auth: Arc<FakeAuth>,
    zones: Arc<FakeZones>,
    nodes: Arc<FakeNodes>,
    smoke: Arc<FakeSmoke>,
}

async fn deployer_on_fakes(
    nats: &OperatorNats,
    dir: &std::path::Path,
) -> (Fakes, Platform, DeployerServiceClient<ramen_clients::Signed>) {
    deployer_on_fakes_with(nats, dir, |_| {}).await
}

async fn deployer_on_fakes_with(
    nats: &OperatorNats,
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut ramen_deployer::DeployerSettings),
) -> (Fakes, Platform, DeployerServiceClient<ramen_clients::Signed>) {
    let zones = Arc::new(FakeZones::default().with_zone("zone-a").with_zone("zone-b"));
    let nodes = Arc::new(FakeNodes::behind(zones.clone()));
    *nodes.packages.lock() =
        vec![common::PackageReport { name: "notes".into(), ..Default::default() }];
    let fakes = Fakes {
        auth: Arc::new(FakeAuth::default()),
        zones,
        nodes,
        smoke: Arc::new(FakeSmoke::default()),
    };
    fakes.auth.secrets.lock().insert("GREETING".into(), "hello".into());
    // The deployer alone, as its own NATS user.
    let config = as_user(test_config(dir, &nats.url()), nats, Role::Deployer);
    let platform = Platform::open(config.clone(), &nats.url(), Shutdown::new()).await.unwrap();
    let ports = Ports {
        auth: fakes.auth.clone(),
        zones: fakes.zones.clone(),
        nodes: fakes.nodes.clone(),
        smoke: fakes.smoke.clone(),
    };
    let mut settings = fast(&config);
    tweak(&mut settings);
    let started = ramen_deployer::start_with(platform.clone(), settings, ports)
        .await
        .expect("deployer starts");
    let url = format!("http://{}", started.running.addr);
    let client = DeployerServiceClient::new(test_channel(
        &url,
        platform.tickets.clone(),
        ramen_access::audience::DEPLOYER,
    ));
    (fakes, platform, client)
}

async fn group_and_env(client: &mut DeployerServiceClient<ramen_clients::Signed>, repo: &Repo) {
    let group =
        pb::CreateGroupRequest { name: "team".into(), repo_url: repo.url(), ..Default::default() };
    client.create_group(group).await.expect("group created");
    let env = pb::CreateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        zones: vec!["zone-a".into(), "zone-b".into()],
        ..Default::default()
    };
    client.create_environment(env).await.expect("environment created");
}

async fn finished(
    client: &DeployerServiceClient<ramen_clients::Signed>,
    job_id: &str,
) -> pb::DeployJob {
    eventually("the job finishes", Duration::from_secs(60), || {
        let mut client = client.clone();
        async move {
            let request = pb::GetJobRequest { job_id: job_id.to_owned() };
            let job = client.get_job(request).await.map_err(|e| e.to_string())?.into_inner();
            match job.state() {
                JobState::Succeeded | JobState::Failed => Ok(job),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await
}

/// Deploys `git_ref` to `team`/`prod` and waits for the job to end.
async fn deploy_ref(
    client: &mut DeployerServiceClient<ramen_clients::Signed>,
    git_ref: &str,
) -> pb::DeployJob {
    let start = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        git_ref: git_ref.into(),
        ..Default::default()
    };
    let started = client.start_deploy(start).await.unwrap().into_inner();
    finished(client, &started.job_id).await
}

fn rollouts_of(zones: &FakeZones, zone: &str) -> Vec<(i32, Option<u32>)> {
    let rollouts = zones.rollouts.lock();
    rollouts.iter().filter(|r: &&Rollout| r.zone == zone).map(|r| (r.track, r.replicas)).collect()
}

#[tokio::test]
async fn each_step_asks_its_port_once_and_nothing_is_loaded_twice() {
    let nats = OperatorNats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (fakes, _platform, mut client) = deployer_on_fakes(&nats, dir.path()).await;
    let repo = Repo::hello();
    group_and_env(&mut client, &repo).await;
    assert_eq!(*fakes.auth.groups.lock(), vec!["team".to_owned()], "registered with auth");

    let start = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let started = client.start_deploy(start).await.unwrap().into_inner();
    let job = started.job.expect("StartDeploy answers the job itself");
    assert_eq!((job.id.as_str(), job.state()), (started.job_id.as_str(), JobState::Queued));
    let job = finished(&client, &started.job_id).await;
    assert_eq!(job.state(), JobState::Succeeded, "{}", job.error);

    let (canary, stable) = (Track::WorkerCanary as i32, Track::Worker as i32);
    for zone in ["zone-a", "zone-b"] {
        assert_eq!(rollouts_of(&fakes.zones, zone), vec![(canary, None), (stable, None)], "{zone}");
        let written = fakes.zones.written.lock().get(&("team".into(), zone.into())).cloned();
        let written = written.expect("config written");
        assert!(
            written.policy.unwrap_or_default().key_hashes.is_empty(),
            "keys are the zone-manager's"
        );
        assert_eq!(written.deploy_keys.len(), 1, "the job's smoke key, beside auth's");
        assert_eq!(written.secrets.len(), 1);
        let snapshot = written.snapshot.unwrap();
        assert_eq!(snapshot.commit, repo.head());
        assert!(snapshot.environment.is_some(), "the config names the environment built for it");
    }
    // One environment per deploy: asked once per zone, one at a time; the first installs.
    let builds = fakes.zones.builds.lock().clone();
    assert_eq!(builds.len(), 2, "{builds:?}");
    let job_log: Vec<String> = job
        .zones
        .iter()
        .flat_map(|z| &z.steps)
        .filter(|s| s.step() == ramen_proto::common::v1::DeployStep::WriteConfig)
        .flat_map(|s| s.log.iter().map(|l| l.text.clone()))
        .collect();
    let installed = job_log.iter().filter(|l| l.contains("installed for this deploy")).count();
    let found = job_log.iter().filter(|l| l.contains("present: nothing installed")).count();
    assert_eq!((installed, found), (1, 1), "{job_log:?}");
    // The smoke step read each canary's status (the load its restart made) and never reloaded.
    assert!(fakes.nodes.reloads.lock().is_empty(), "no second load of the snapshot");
    let calls = fakes.nodes.status_calls.lock().clone();
    for zone in ["zone-a", "zone-b"] {
        assert_eq!(
            calls.get(&FakeZones::admin_address("team", zone, canary)),
            Some(&1),
            "{calls:?}"
        );
        // Stable's status only says whether it serves a commit to compare surfaces with.
        assert_eq!(
            calls.get(&FakeZones::admin_address("team", zone, stable)),
            Some(&1),
            "{calls:?}"
        );
    }
    let asked = fakes.smoke.asked.lock().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|(_, key)| key.starts_with("rk_smoke_")), "{asked:?}");
    // Key hashes: auth is never asked by the deployer (the zone-manager owns distributing them).
    assert_eq!(fakes.auth.calls_of("list_mcp_key_hashes"), 0);
    assert_eq!(fakes.auth.calls_of("resolve_secrets"), 2, "once per zone");
    let cleared = fakes.zones.live_policies.lock().iter().filter(|p| p.clear_deploy_keys).count();
    assert_eq!(cleared, 2, "each zone's smoke key dropped when the zone is done");
    let reports = fakes.zones.reports.lock().clone();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].packages[0].name, "notes");
    assert!(fakes.auth.audit_actions().contains(&"deploy.start".to_owned()));
}

#[tokio::test]
async fn a_canary_that_is_not_ready_fails_the_zone_scales_it_to_zero_and_leaves_stable_alone() {
    let nats = OperatorNats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (fakes, _platform, mut client) = deployer_on_fakes(&nats, dir.path()).await;
    let repo = Repo::hello();
    group_and_env(&mut client, &repo).await;
    let canary = Track::WorkerCanary as i32;
    fakes.zones.stuck.lock().insert(canary, "Unschedulable: 0/3 nodes are available".into());

    let start = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let job_id = client.start_deploy(start).await.unwrap().into_inner().job_id;
    let job = finished(&client, &job_id).await;
    assert_eq!(job.state(), JobState::Failed);
    assert!(job.error.contains("Unschedulable"), "{}", job.error);
    for zone in ["zone-a", "zone-b"] {
        // Restarted, then scaled to zero; stable never touched.
        assert_eq!(
            rollouts_of(&fakes.zones, zone),
            vec![(canary, None), (canary, Some(0))],
            "{zone}"
        );
    }
    assert!(fakes.smoke.asked.lock().is_empty(), "no smoke test on a canary that never ran");
}

#[tokio::test]
async fn a_failed_install_fails_the_deploy_before_any_canary_restarts() {
    let nats = OperatorNats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (fakes, _platform, mut client) = deployer_on_fakes(&nats, dir.path()).await;
    let repo = Repo::hello();
    group_and_env(&mut client, &repo).await;
    *fakes.zones.build_error.lock() = Some(
        "pip install -r requirements.txt failed: ERROR: No matching distribution found for nope==9"
            .into(),
    );
    let start = pb::StartDeployRequest {
        group: "team".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let job_id = client.start_deploy(start).await.unwrap().into_inner().job_id;
    let job = finished(&client, &job_id).await;
    assert_eq!(job.state(), JobState::Failed);
    assert!(job.error.contains("nope==9"), "{}", job.error);
    assert!(fakes.zones.rollouts.lock().is_empty(), "no track was touched");
    assert!(fakes.zones.written.lock().is_empty(), "no config written for a failed build");
}

/// After each success the group's snapshots and environments that no kept commit uses go:
/// here the last two successes are kept, with no grace period.
#[tokio::test]
async fn unused_snapshots_and_environments_are_collected_after_a_success() {
    let nats = OperatorNats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (fakes, platform, mut client) = deployer_on_fakes_with(&nats, dir.path(), |s| {
        s.artifact_grace = Duration::ZERO;
        s.keep_successes = 2;
    })
    .await;
    let repo = Repo::hello();
    let v1 = repo.head();
    let v2 = repo.branch("v2", |r| r.write("notes/extra.txt", "two"));
    let v3 = repo.branch("v3", |r| r.write("notes/extra.txt", "three"));
    group_and_env(&mut client, &repo).await;
    let blob = platform.blob.clone();
    // An environment from before deploys marked what they use: never removed on a guess.
    blob.put("groups/team/environments/legacy.tar.gz", b"old".to_vec().into()).await.unwrap();

    let mut env_of = std::collections::BTreeMap::new();
    for git_ref in ["v1", "v2", "v3"] {
        let job = deploy_ref(&mut client, git_ref).await;
        assert_eq!(job.state(), JobState::Succeeded, "{git_ref}: {}", job.error);
        // What the builder would have stored for this commit's environment.
        let written = fakes.zones.written.lock().get(&("team".into(), "zone-a".into())).cloned();
        let key = written.unwrap().snapshot.unwrap().environment.unwrap().key;
        for suffix in ["tar.gz", "json"] {
            let object = format!("groups/team/environments/{key}.{suffix}");
            blob.put(&object, b"env".to_vec().into()).await.unwrap();
        }
        env_of.insert(job.commit.clone(), key);
    }
    let snapshots = || async {
        let keys = blob.list("groups/team/snapshots/").await.unwrap();
        let mut commits: Vec<String> = keys
            .iter()
            .filter_map(|k| k.strip_suffix(".tar.gz"))
            .map(|k| k.rsplit('/').next().unwrap().to_owned())
            .collect();
        commits.sort();
        commits
    };
    let present = |key: &str| {
        let blob = blob.clone();
        let object = format!("groups/team/environments/{key}.tar.gz");
        async move { blob.exists(&object).await.unwrap() }
    };
    let mut expected = vec![v2.clone(), v3.clone()];
    expected.sort();
    eventually("v1's snapshot is collected", Duration::from_secs(20), || async {
        let now = snapshots().await;
        if now == expected { Ok(()) } else { Err(now) }
    })
    .await;
    assert!(
        !blob.exists(&format!("groups/team/snapshots/{v1}.json")).await.unwrap(),
        "sidecar too"
    );
    assert!(!present(&env_of[&v1]).await, "v1's environment is collected");
    let leftovers = blob.list(&format!("groups/team/environments/{}", env_of[&v1])).await.unwrap();
    assert!(leftovers.is_empty(), "markers and sidecar go with it: {leftovers:?}");
    assert!(present(&env_of[&v2]).await && present(&env_of[&v3]).await, "kept commits keep theirs");
    assert!(present("legacy").await, "an unmarked environment stays");

    // A rollback to a collected commit uploads its snapshot again and deploys.
    let job = deploy_ref(&mut client, "v1").await;
    assert_eq!(job.state(), JobState::Succeeded, "{}", job.error);
    let mut expected = vec![v1.clone(), v3.clone()];
    expected.sort();
    eventually("now v2's snapshot goes", Duration::from_secs(20), || async {
        let now = snapshots().await;
        if now == expected { Ok(()) } else { Err(now) }
    })
    .await;
}

#[tokio::test]
async fn record_arguments_reaches_the_nodes_at_the_next_deploy() {
    let nats = OperatorNats::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (fakes, _platform, mut client) = deployer_on_fakes(&nats, dir.path()).await;
    let repo = Repo::hello();
    group_and_env(&mut client, &repo).await;
    let written = |zone: &str| {
        let config = fakes.zones.written.lock().get(&("team".into(), zone.into())).cloned();
        config.expect("config written").policy.unwrap_or_default().record_arguments
    };
    let job = deploy_ref(&mut client, "main").await;
    assert_eq!(job.state(), JobState::Succeeded, "{}", job.error);
    assert!(!written("zone-a"), "off by default: records say who called what, never with what");

    let on = pb::UpdateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        record_arguments: Some(true),
        ..Default::default()
    };
    let env = client.update_environment(on).await.unwrap().into_inner();
    assert!(env.record_arguments);
    assert!(!written("zone-a"), "the running config keeps the old setting until a deploy");
    let audited = fakes.auth.audit.lock().last().cloned().expect("the update is audited");
    assert_eq!(audited.action, "environment.update");
    assert_eq!(audited.details.get("record_arguments").map(String::as_str), Some("true"));

    // An update that leaves it unset keeps it.
    let verbose = pb::UpdateEnvironmentRequest {
        group: "team".into(),
        name: "prod".into(),
        verbose: Some(true),
        ..Default::default()
    };
    let env = client.update_environment(verbose).await.unwrap().into_inner();
    assert!(env.record_arguments, "unset keeps the setting");

    let job = deploy_ref(&mut client, "main").await;
    assert_eq!(job.state(), JobState::Succeeded, "{}", job.error);
    assert!(written("zone-a") && written("zone-b"), "the next deploy writes it on every zone");
}
