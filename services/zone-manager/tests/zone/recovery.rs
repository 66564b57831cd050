//! A control-plane restart keeps the state: placements that had workers get them back, and a
//! worker process left behind by a previous run is stopped before its slot starts again.

use std::os::unix::process::CommandExt;
use std::time::Duration;

use ramen_proto::common::v1 as common;
use ramen_testkit::eventually;

use crate::mcp::add_once;
use crate::support::{Harness, KEY, pids_under, python};

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn workers_come_back_after_a_restart_and_leftovers_are_stopped() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    assert!(h.restart("team", "local-a", common::Track::Worker, MINUTE).await.ready);
    let (nats, dir) = h.stop().await;
    let placement = dir.path().join("zones/local-a/team");
    assert!(pids_under(&placement).is_empty(), "stopping the service drains and stops its workers");

    // Something still running in the worker's slot with its config path, as a worker of a
    // crashed control plane would be: the next start must stop it.
    let worker_dir = placement.join("workers/worker-0");
    let config = worker_dir.join("node.toml");
    let leftover = std::process::Command::new(python())
        .args(["-c", "import time; time.sleep(300)"])
        .arg(&config)
        .process_group(0)
        .spawn()
        .unwrap();
    std::fs::write(worker_dir.join("worker.pid"), format!("{}\n", leftover.id())).unwrap();

    let mut h = Harness::start_on(nats, dir, |_| {}).await;
    let worker = eventually("the worker is back", MINUTE, || {
        let mut client = h.client.clone();
        async move {
            let request = ramen_proto::zone::v1::ListWorkersRequest {
                group: "team".into(),
                zone: "local-a".into(),
                ..Default::default()
            };
            let workers = client.list_workers(request).await.unwrap().into_inner().workers;
            workers
                .into_iter()
                .find(|w| w.state == common::WorkerState::Ready as i32)
                .ok_or("not ready yet")
        }
    })
    .await;
    assert_eq!((worker.id.as_str(), worker.loaded_commit.as_str()), ("worker-0", "c1"));
    assert_eq!(add_once(&worker.mcp_address, KEY, 5, 5).await.unwrap(), 10);
    let mut leftover = leftover;
    let status = tokio::task::spawn_blocking(move || leftover.wait()).await.unwrap().unwrap();
    assert!(!status.success(), "the leftover process was killed: {status:?}");
    assert_eq!(h.workers("team", "local-a").await.len(), 1);
    h.stop().await;
}
