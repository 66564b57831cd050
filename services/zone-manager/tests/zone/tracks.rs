//! Workers start and become ready, are replaced when killed, scale to zero and back, and restart
//! in place without taking the other track (or the rest of their own track) down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use ramen_clients::Signed;
use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use ramen_testkit::eventually;
use ramen_zone_manager::store;

use crate::mcp::add_once;
use crate::support::{Harness, KEY, pids_under};

const READY: i32 = common::WorkerState::Ready as i32;
const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn workers_start_become_ready_and_are_replaced_when_killed() {
    let mut h = Harness::start().await;
    let mut changes =
        h.platform.bus.subscribe(&ramen_service::subject::<ev::WorkerChanged>()).await.unwrap();
    h.configured("team", "local-a", "c1").await;

    let rollout = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    assert!(rollout.ready, "{rollout:?}");
    let worker = &rollout.workers[0];
    assert_eq!((worker.id.as_str(), worker.state), ("worker-0", READY));
    assert_eq!(worker.loaded_commit, "c1");
    assert_eq!(add_once(&worker.mcp_address, KEY, 2, 40).await.unwrap(), 42);

    // The edge's view, the zones page, and the record with its limits.
    let endpoints = h
        .client
        .list_endpoints(pb::ListEndpointsRequest {
            group: "team".into(),
            ready_only: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let zone = &endpoints.zones[0];
    assert_eq!((zone.zone.as_str(), zone.endpoints.len()), ("local-a", 1));
    assert_eq!(
        (zone.endpoints[0].address.as_str(), zone.endpoints[0].weight),
        (worker.mcp_address.as_str(), 100)
    );
    // And its abstract socket on this host (this kernel scopes abstract sockets away from
    // the group's code), where the edge reaches it for less.
    let local = &zone.endpoints[0].local_address;
    let name = local.strip_prefix("@ramen/node/").unwrap_or_else(|| panic!("{local:?}"));
    tokio::net::UnixStream::connect(format!("\0ramen/node/{name}")).await.unwrap();
    let weights = |weights: Vec<(&str, u32)>| pb::SetEdgeWeightsRequest {
        group: "team".into(),
        zone: "local-a".into(),
        weights: weights
            .into_iter()
            .map(|(id, weight)| pb::WorkerWeight { worker_id: id.into(), weight })
            .collect(),
    };
    let set = h.client.set_edge_weights(weights(vec![("worker-0", 7)])).await.unwrap().into_inner();
    assert_eq!((set.weights[0].worker_id.as_str(), set.weights[0].weight), ("worker-0", 7));
    let unknown = h.client.set_edge_weights(weights(vec![("worker-9", 1)])).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound, "{unknown:?}");
    let heavy = h.client.set_edge_weights(weights(vec![("worker-0", 1001)])).await.unwrap_err();
    assert!(heavy.message().contains("above the maximum weight 1000"), "{}", heavy.message());
    let request = pb::ListEndpointsRequest { group: "team".into(), ..Default::default() };
    let endpoints = h.client.list_endpoints(request).await.unwrap().into_inner();
    assert_eq!(endpoints.zones[0].endpoints[0].weight, 7, "what the edge now uses");
    let summaries = h
        .client
        .list_zone_summaries(pb::ListZoneSummariesRequest::default())
        .await
        .unwrap()
        .into_inner();
    let counts = &summaries.zones[0].groups[0];
    assert_eq!(
        (counts.group.as_str(), counts.worker, counts.worker_canary, counts.desired),
        ("team", 1, 0, 1)
    );
    let record = eventually("the worker record", MINUTE, || async {
        let doc = h.platform.store.get(store::WORKERS, "team/local-a/worker-0").await.unwrap();
        doc.filter(|d| d.doc["state"] == "ready").ok_or("no ready record yet")
    })
    .await;
    assert!(record.doc["limits"].as_str().unwrap().contains("memory 512Mi"), "{}", record.doc);

    // Kill it: the supervisor replaces it, on new ports, and it serves again.
    let pid = h.worker_pid("team", "local-a", "worker-0").expect("pid file");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let replaced = eventually("a ready replacement", MINUTE, || {
        let mut client = h.client.clone();
        async move {
            let request = pb::ListWorkersRequest {
                group: "team".into(),
                zone: "local-a".into(),
                ..Default::default()
            };
            let workers = client.list_workers(request).await.unwrap().into_inner().workers;
            workers
                .into_iter()
                .find(|w| w.state == READY && w.restarts >= 1)
                .ok_or("not replaced yet")
        }
    })
    .await;
    assert_ne!(h.worker_pid("team", "local-a", "worker-0"), Some(pid));
    assert_eq!(add_once(&replaced.mcp_address, KEY, 1, 1).await.unwrap(), 2);

    let mut seen_exit = false;
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(200), changes.next()).await
    {
        let change = message.payload;
        if change.worker_id == "worker-0" && change.state == common::WorkerState::Exited as i32 {
            assert!(change.reason.contains("killed by signal 9"), "{change:?}");
            seen_exit = true;
        }
    }
    assert!(seen_exit, "WorkerChanged reported the exit");
    let placement = eventually("the placement is ready again", MINUTE, || {
        let mut client = h.client.clone();
        async move {
            let request = pb::GetPlacementRequest { group: "team".into(), zone: "local-a".into() };
            let placement = client.get_placement(request).await.unwrap().into_inner();
            if placement.status == common::PlacementStatus::Ready as i32 {
                Ok(placement)
            } else {
                Err(placement)
            }
        }
    })
    .await;
    assert_eq!(placement.config_commit, "c1");
    h.stop().await;
}

#[tokio::test]
async fn a_track_scales_to_zero_and_back() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    let two = h.scale("team", "local-a", common::Track::Worker, 2).await;
    assert!(two.ready && two.workers.len() == 2, "{two:?}");
    assert!(two.workers.iter().all(|w| w.state == READY));

    let zero = h.scale("team", "local-a", common::Track::Worker, 0).await;
    assert!(zero.ready && zero.workers.is_empty(), "{zero:?}");
    assert!(h.workers("team", "local-a").await.is_empty());
    let dir = h.placement_dir("team", "local-a");
    assert!(pids_under(&dir).is_empty(), "no process left: {:?}", pids_under(&dir));
    eventually("worker records removed", MINUTE, || async {
        let left = h.records(store::WORKERS, "team").await;
        if left.is_empty() { Ok(()) } else { Err(left) }
    })
    .await;

    let back = h.scale("team", "local-a", common::Track::Worker, 1).await;
    assert!(back.ready, "{back:?}");
    assert_eq!(add_once(&back.workers[0].mcp_address, KEY, 20, 22).await.unwrap(), 42);
    h.stop().await;
}

/// One call as the edge makes it: any ready stable endpoint, the next one when a node refuses,
/// and once more on a fresh endpoint list (the list read may predate the last restart step).
async fn edge_call(client: &mut ZoneServiceClient<Signed>) -> bool {
    for _attempt in 0..2 {
        let request = pb::ListEndpointsRequest {
            group: "team".into(),
            ready_only: true,
            ..Default::default()
        };
        let zones = client.list_endpoints(request).await.unwrap().into_inner().zones;
        for endpoint in zones.iter().flat_map(|z| &z.endpoints) {
            if add_once(&endpoint.address, KEY, 1, 2).await.is_ok_and(|v| v == 3) {
                return true;
            }
        }
    }
    false
}

/// Calls in a loop through [`edge_call`]; counts calls no endpoint could answer.
fn call_through_the_edge(
    h: &Harness,
    stop: Arc<AtomicBool>,
) -> (tokio::task::JoinHandle<()>, Arc<AtomicU32>, Arc<AtomicU32>) {
    let (ok, failed) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (mut client, ok_count, failed_count) = (h.client.clone(), ok.clone(), failed.clone());
    let handle = tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            let counter = if edge_call(&mut client).await { &ok_count } else { &failed_count };
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    (handle, ok, failed)
}

#[tokio::test]
async fn restarting_in_place_keeps_the_other_track_and_the_rest_of_the_track_serving() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    assert!(h.restart("team", "local-a", common::Track::WorkerCanary, MINUTE).await.ready);
    assert!(h.restart("team", "local-a", common::Track::Worker, MINUTE).await.ready);

    // A deploy's canary step: stable keeps answering while the canary restarts on c2.
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, ok, failed) = call_through_the_edge(&h, stop.clone());
    h.write_config("team", "local-a", "c2", "examples/hello-repo").await;
    let canary = h.restart("team", "local-a", common::Track::WorkerCanary, MINUTE).await;
    assert!(canary.ready, "{canary:?}");
    assert_eq!(canary.workers[0].loaded_commit, "c2");
    stop.store(true, Ordering::SeqCst);
    calls.await.unwrap();
    assert!(ok.load(Ordering::SeqCst) > 0);
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "stable answered every call during the canary restart"
    );
    let stable =
        h.workers("team", "local-a").await.into_iter().find(|w| w.id == "worker-0").unwrap();
    assert_eq!(stable.loaded_commit, "c1", "stable untouched by the canary step");

    // Two stable workers restart one at a time: the track keeps answering.
    let count =
        pb::SetWorkerCountRequest { group: "team".into(), zone: "local-a".into(), count: 2 };
    let placement = h.client.set_worker_count(count).await.unwrap().into_inner();
    assert_eq!((placement.worker_count, placement.max_workers), (2, 4));
    assert_eq!(
        h.workers("team", "local-a")
            .await
            .iter()
            .filter(|w| w.track == 1 && w.state == READY)
            .count(),
        2
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, ok, failed) = call_through_the_edge(&h, stop.clone());
    let stable = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    stop.store(true, Ordering::SeqCst);
    calls.await.unwrap();
    assert!(stable.ready && stable.workers.len() == 2, "{stable:?}");
    assert!(
        stable.workers.iter().all(|w| w.loaded_commit == "c2" && w.restarts == 1),
        "{stable:?}"
    );
    assert!(ok.load(Ordering::SeqCst) > 0);
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "one stable worker answered while the other restarted"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_track_of_one_restarting_hands_its_calls_to_the_ready_canary() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    assert!(h.restart("team", "local-a", common::Track::Worker, MINUTE).await.ready);
    h.write_config("team", "local-a", "c2", "examples/hello-repo").await;
    assert!(h.restart("team", "local-a", common::Track::WorkerCanary, MINUTE).await.ready);

    // A deploy's stable step on a zone of one stable worker: while it restarts on c2, the
    // edge's list offers the canary (on c2, smoke-tested) instead of no one.
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, ok, failed) = call_through_the_edge(&h, stop.clone());
    let stable = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    stop.store(true, Ordering::SeqCst);
    calls.await.unwrap();
    assert!(stable.ready && stable.workers[0].loaded_commit == "c2", "{stable:?}");
    assert!(ok.load(Ordering::SeqCst) > 0);
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "the canary answered while stable's only worker restarted"
    );

    // Stable ready again: the edge's list is stable alone.
    let request =
        pb::ListEndpointsRequest { group: "team".into(), ready_only: true, ..Default::default() };
    let zones = h.client.list_endpoints(request).await.unwrap().into_inner().zones;
    let ids: Vec<_> = zones[0].endpoints.iter().map(|e| e.worker_id.as_str()).collect();
    assert_eq!(ids, ["worker-0"]);
    h.stop().await;
}
