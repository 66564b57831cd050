use prost::Message;
use prost_types::{Duration, Timestamp};

use crate::common::v1 as common;
use crate::{auth::v1 as auth, deployer::v1 as deployer, rebalancer::v1 as rebalancer};
use crate::{runner::v1 as runner, zone::v1 as zone};

fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(message: &M) -> M {
    let bytes = message.encode_to_vec();
    let decoded = M::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(&decoded, message);
    decoded
}

fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

#[test]
fn messages_round_trip_through_prost() {
    let claims = auth::Claims {
        user_id: "u-1".into(),
        super_admin: true,
        memberships: vec![auth::Membership {
            group: "team-a".into(),
            role: auth::Role::Admin.into(),
            ..Default::default()
        }],
        expires_at: at(1_760_000_900),
        ..Default::default()
    };
    assert_eq!(round_trip(&claims).memberships[0].role(), auth::Role::Admin);

    let step = deployer::StepRun {
        step: common::DeployStep::Canary.into(),
        status: common::StepStatus::Failed.into(),
        started_at: at(10),
        ended_at: at(70),
        stuck: vec![deployer::StuckWorker {
            worker: "worker-canary-0".into(),
            reason: "exit code 1".into(),
        }],
        ..Default::default()
    };
    let job = deployer::DeployJob {
        id: "job-1".into(),
        state: common::JobState::FailedResumable.into(),
        zones: vec![deployer::ZoneRun {
            zone: "local-a".into(),
            steps: vec![step],
            ..Default::default()
        }],
        ..Default::default()
    };
    let watched = deployer::WatchJobResponse {
        update: Some(deployer::watch_job_response::Update::Snapshot(job)),
    };
    let Some(deployer::watch_job_response::Update::Snapshot(job)) = round_trip(&watched).update
    else {
        panic!("oneof lost");
    };
    assert_eq!(job.zones[0].steps[0].stuck[0].worker, "worker-canary-0");
}

#[test]
fn node_config_and_reload_report_round_trip() {
    let config = zone::NodeConfig {
        environment: "prod".into(),
        policy: Some(common::NodePolicy {
            version: 7,
            blocked: vec!["weather.forecast".into()],
            key_hashes: vec![common::KeyHash { key_id: "k1".into(), ..Default::default() }],
            ip_allow: vec!["10.0.0.0/8".into(), "::1/128".into()],
            ..Default::default()
        }),
        secrets: vec![zone::NodeSecret { name: "API".into(), value: "v".into() }],
        snapshot: Some(common::Snapshot { commit: "abc".into(), ..Default::default() }),
        verbose: true,
        deploy_keys: Vec::new(),
        egress_allow: vec!["5432".into()],
    };
    assert_eq!(round_trip(&config).policy.unwrap().ip_allow.len(), 2);

    let reload = runner::ReloadResponse {
        outcome: runner::ReloadOutcome::PackageErrors.into(),
        packages: vec![common::PackageReport {
            name: "broken".into(),
            error: Some(common::LoadError {
                message: "ModuleNotFoundError".into(),
                traceback: "Traceback (most recent call last): ...".into(),
            }),
            ..Default::default()
        }],
        pip_ran: true,
        took: Some(Duration { seconds: 3, nanos: 0 }),
        ..Default::default()
    };
    assert_eq!(round_trip(&reload).outcome(), runner::ReloadOutcome::PackageErrors);

    let cell = rebalancer::LoadCell {
        state: common::LoadState::Down.into(),
        utilization: 0.5,
        ..Default::default()
    };
    assert_eq!(round_trip(&cell).state(), common::LoadState::Down);
}

#[test]
fn optional_fields_keep_presence() {
    let unset = deployer::UpdateEnvironmentRequest { name: "prod".into(), ..Default::default() };
    let clear = deployer::UpdateEnvironmentRequest {
        blocked: Some(common::StringList::default()),
        verbose: Some(false),
        ..unset.clone()
    };
    assert!(round_trip(&unset).blocked.is_none() && round_trip(&unset).verbose.is_none());
    let decoded = round_trip(&clear);
    assert_eq!(decoded.blocked, Some(common::StringList::default()));
    assert_eq!(decoded.verbose, Some(false));
}

#[test]
fn authorize_response_allowed_only_on_allow() {
    let answer =
        |d: auth::Decision| auth::AuthorizeResponse { decision: d.into(), ..Default::default() };
    assert!(answer(auth::Decision::Allow).allowed());
    assert!(!answer(auth::Decision::Deny).allowed());
    assert!(!answer(auth::Decision::NotFound).allowed());
}

// Compiles only if every service has its server and client types (features `server`, `client`).
#[cfg(all(feature = "server", feature = "client"))]
#[allow(dead_code)]
fn services_exist(
    _: (
        auth::auth_service_server::AuthServiceServer<()>,
        auth::auth_service_client::AuthServiceClient<()>,
    ),
    _: (
        deployer::deployer_service_server::DeployerServiceServer<()>,
        deployer::deployer_service_client::DeployerServiceClient<()>,
    ),
    _: (
        zone::zone_service_server::ZoneServiceServer<()>,
        zone::zone_service_client::ZoneServiceClient<()>,
    ),
    _: (
        rebalancer::rebalancer_service_server::RebalancerServiceServer<()>,
        rebalancer::rebalancer_service_client::RebalancerServiceClient<()>,
    ),
    _: (
        runner::runner_service_server::RunnerServiceServer<()>,
        runner::runner_service_client::RunnerServiceClient<()>,
    ),
) {
}

#[cfg(feature = "server")]
#[test]
fn services_have_their_names() {
    use tonic::server::NamedService;
    assert_eq!(
        <auth::auth_service_server::AuthServiceServer<()> as NamedService>::NAME,
        "ramen.auth.v1.AuthService"
    );
    assert_eq!(
        <runner::runner_service_server::RunnerServiceServer<()> as NamedService>::NAME,
        "ramen.runner.v1.RunnerService"
    );
}
