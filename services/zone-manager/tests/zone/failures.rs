//! A worker that never becomes ready is named, with why: its readiness answer and log lines, or
//! its exit code. Not ready in time is an answer (`ready: false`), not an error.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;

use crate::mcp::add_once;
use crate::support::{Harness, KEY, pids_under};

#[tokio::test]
async fn a_snapshot_that_cannot_load_names_the_canary_and_stable_keeps_serving() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    let stable = h.restart("team", "local-a", common::Track::Worker, Duration::from_secs(60)).await;
    assert!(stable.ready, "{stable:?}");

    // A config whose snapshot digest does not match the archive: the node refuses to load it.
    let mut snapshot = h.snapshot("team", "examples/hello-repo", "c2").await;
    snapshot.digest = format!("sha256:{}", "0".repeat(64));
    let config = pb::NodeConfig {
        environment: "prod".into(),
        // The test key comes from (fake) auth, as the zone-manager asks for it.
        snapshot: Some(snapshot),
        ..Default::default()
    };
    let write = pb::WriteConfigRequest {
        group: "team".into(),
        zone: "local-a".into(),
        config: Some(config),
    };
    h.client.write_config(write).await.unwrap();
    let canary =
        h.restart("team", "local-a", common::Track::WorkerCanary, Duration::from_secs(8)).await;
    assert!(!canary.ready);
    let stuck = &canary.not_ready[0];
    assert_eq!(stuck.worker_id, "worker-canary-0");
    assert!(stuck.reason.starts_with("not ready after 8s: readiness 503"), "{stuck:?}");
    assert!(
        stuck.last_log_lines.iter().any(|l| l.contains("refusing to load it")),
        "{:#?}",
        stuck.last_log_lines
    );
    let placement = h
        .client
        .get_placement(pb::GetPlacementRequest { group: "team".into(), zone: "local-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(placement.status, common::PlacementStatus::Degraded as i32);
    assert!(
        placement.status_message.starts_with("worker-canary-0 not ready"),
        "{}",
        placement.status_message
    );

    // The deploy's rollback: canary to zero; stable never stopped serving c1.
    let zero = h.scale("team", "local-a", common::Track::WorkerCanary, 0).await;
    assert!(zero.workers.is_empty());
    let workers = h.workers("team", "local-a").await;
    assert_eq!(workers.len(), 1);
    assert_eq!((workers[0].id.as_str(), workers[0].loaded_commit.as_str()), ("worker-0", "c1"));
    assert_eq!(add_once(&workers[0].mcp_address, KEY, 40, 2).await.unwrap(), 42);
    h.stop().await;
}

#[tokio::test]
async fn a_worker_that_keeps_exiting_is_named_with_its_exit_code_and_log() {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("broken-worker");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"broken-worker: cannot bind anything\" >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = script.display().to_string();
    let mut h = Harness::start_with(move |config| config.zone.worker_binary = path).await;
    h.configured("team", "local-a", "c1").await;

    let rollout =
        h.restart("team", "local-a", common::Track::Worker, Duration::from_secs(30)).await;
    assert!(!rollout.ready);
    let stuck = &rollout.not_ready[0];
    assert_eq!(stuck.worker_id, "worker-0");
    assert_eq!(stuck.exit_code, Some(3), "{stuck:?}");
    assert!(
        stuck.reason.contains("keeps exiting") && stuck.reason.contains("exited with code 3"),
        "{stuck:?}"
    );
    assert!(stuck.last_log_lines.iter().any(|l| l.contains("cannot bind anything")), "{stuck:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_bad_python_leaves_the_worker_not_ready_with_the_reason_in_its_log() {
    let mut h = Harness::start_with(|config| {
        config.zone.python = "/nonexistent/python3".into();
        config.zone.venv_without_pip = false; // the node creates its virtualenv itself
    })
    .await;
    h.configured("team", "local-a", "c1").await;
    let rollout =
        h.restart("team", "local-a", common::Track::WorkerCanary, Duration::from_secs(6)).await;
    assert!(!rollout.ready);
    let stuck = &rollout.not_ready[0];
    assert_eq!(stuck.worker_id, "worker-canary-0");
    assert!(stuck.reason.contains("no snapshot loaded yet"), "{stuck:?}");
    assert!(
        stuck
            .last_log_lines
            .iter()
            .any(|l| l.contains("cannot create the virtualenv with /nonexistent/python3")),
        "{:#?}",
        stuck.last_log_lines
    );
    assert_eq!(stuck.exit_code, None, "the node runs; only its runtime cannot start");
    let dir = h.placement_dir("team", "local-a");
    h.scale("team", "local-a", common::Track::WorkerCanary, 0).await;
    assert!(pids_under(&dir).is_empty());
    h.stop().await;
}
