//! Teardown for real: no process, no directory, no record left (checked by listing them); a
//! teardown interrupted in the middle is finished by the next run; group deletion and zone
//! deletion tear down every placement they cover.

use std::time::Duration;

use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::eventually;
use ramen_zone_manager::store;
use ramen_zone_manager::teardown::{STEPS, TeardownPhase};

use crate::support::{Harness, pids_under};

const MINUTE: Duration = Duration::from_secs(60);

async fn wait_done(h: &Harness, group: &str, zone: &str) -> pb::TeardownProgress {
    eventually("teardown done", MINUTE, || {
        let mut client = h.client.clone();
        async move {
            let request = pb::TeardownRequest { group: group.into(), zone: zone.into() };
            let progress = client.get_teardown(request).await.unwrap().into_inner().placements;
            match progress.first() {
                Some(p) if p.state == pb::TeardownState::Done as i32 => Ok(p.clone()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await
}

/// Nothing of the group is left: processes, directories, records.
async fn assert_nothing_left(h: &mut Harness, group: &str, zone: &str) {
    let dir = h.placement_dir(group, zone);
    assert!(
        pids_under(&h.zones_dir()).is_empty(),
        "processes left: {:?}",
        pids_under(&h.zones_dir())
    );
    assert!(!dir.exists(), "{} still exists", dir.display());
    for collection in [store::PLACEMENTS, store::WORKERS, store::PACKAGES] {
        assert_eq!(
            h.records(collection, group).await,
            Vec::<String>::new(),
            "records left in {collection}"
        );
    }
    let listed = h
        .client
        .list_placements(pb::ListPlacementsRequest { group: group.into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert!(listed.placements.is_empty());
}

#[tokio::test]
async fn teardown_leaves_no_process_directory_or_record() {
    let mut h = Harness::start().await;
    let mut changes =
        h.platform.bus.subscribe(&ramen_service::subject::<ev::PlacementChanged>()).await.unwrap();
    h.configured("team", "local-a", "c1").await;
    assert!(h.restart("team", "local-a", common::Track::WorkerCanary, MINUTE).await.ready);
    assert!(h.restart("team", "local-a", common::Track::Worker, MINUTE).await.ready);
    let report = pb::StorePackageReportRequest {
        group: "team".into(),
        zone: "local-a".into(),
        packages: vec![common::PackageReport { name: "notes".into(), ..Default::default() }],
        ..Default::default()
    };
    h.client.store_package_report(report).await.unwrap();
    assert_eq!(
        pids_under(&h.placement_dir("team", "local-a")).len(),
        4,
        "two nodes and their runtimes"
    );

    let request = pb::TeardownRequest { group: "team".into(), zone: "local-a".into() };
    let started = h.client.teardown(request).await.unwrap().into_inner();
    let names: Vec<&str> = started.placements[0].steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, STEPS);
    let done = wait_done(&h, "team", "local-a").await;
    assert!(
        done.steps.iter().all(|s| s.status == common::StepStatus::Succeeded as i32),
        "{done:?}"
    );
    assert!(done.steps[0].detail.contains("stopped 2 worker(s)"), "{:?}", done.steps[0]);
    assert_nothing_left(&mut h, "team", "local-a").await;
    assert!(
        !h.zones_dir().join("local-a").exists(),
        "the zone's directory went with its last placement"
    );

    let mut kinds = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(200), changes.next()).await
    {
        kinds.push(message.payload.change);
    }
    assert!(kinds.contains(&(ev::PlacementChange::TeardownStarted as i32)), "{kinds:?}");
    assert!(kinds.contains(&(ev::PlacementChange::Deleted as i32)), "{kinds:?}");
    // Torn down, the placement can be made again.
    h.configured("team", "local-a", "c2").await;
    h.stop().await;
}

#[tokio::test]
async fn a_teardown_interrupted_in_the_middle_is_finished_by_the_next_run() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    assert!(h.restart("team", "local-a", common::Track::Worker, MINUTE).await.ready);

    // Record the teardown and run it up to the first step only, as if the process died there.
    let manager = h.manager.clone();
    manager.record_teardown(&Default::default(), "team", "local-a").await.unwrap();
    let halfway = manager.run_teardown("team/local-a", Some("drain_workers")).await.unwrap();
    assert_eq!(halfway.state, TeardownPhase::Running);
    assert_eq!(halfway.next_step(), Some("remove_route"));
    assert!(pids_under(&h.zones_dir()).is_empty(), "the drain step ran");
    assert!(h.placement_dir("team", "local-a").exists(), "later steps did not");
    let request = pb::TeardownRequest { group: "team".into(), zone: "local-a".into() };
    let visible = h.client.get_teardown(request).await.unwrap().into_inner().placements.remove(0);
    let statuses: Vec<i32> = visible.steps.iter().map(|s| s.status).collect();
    assert_eq!(statuses[0], common::StepStatus::Succeeded as i32);
    assert!(statuses[1..].iter().all(|s| *s == common::StepStatus::Pending as i32), "{statuses:?}");

    // The control plane restarts: it finds the unfinished teardown and finishes it.
    drop(manager);
    let (nats, dir) = h.stop().await;
    let mut h = Harness::start_on(nats, dir, |_| {}).await;
    wait_done(&h, "team", "local-a").await;
    assert_nothing_left(&mut h, "team", "local-a").await;

    // Same story without workers, finished by calling Teardown again instead.
    h.create_local_zone("local-b").await;
    let ensure = pb::EnsurePlacementRequest { group: "team".into(), zone: "local-b".into() };
    h.client.ensure_placement(ensure).await.unwrap();
    let manager = h.manager.clone();
    manager.record_teardown(&Default::default(), "team", "local-b").await.unwrap();
    manager.run_teardown("team/local-b", Some("remove_identity")).await.unwrap();
    assert!(h.placement_dir("team", "local-b").exists());
    let again = pb::TeardownRequest { group: "team".into(), zone: "local-b".into() };
    h.client.teardown(again).await.unwrap();
    let done = wait_done(&h, "team", "local-b").await;
    assert!(done.steps[4].detail.starts_with("removed"), "{:?}", done.steps[4]);
    assert_nothing_left(&mut h, "team", "local-b").await;
    h.stop().await;
}

#[tokio::test]
async fn group_and_zone_deletion_tear_down_every_placement() {
    let mut h = Harness::start().await;
    let mut deleted =
        h.platform.bus.subscribe(&ramen_service::subject::<ev::ZoneDeleted>()).await.unwrap();
    for zone in ["local-a", "local-b"] {
        h.configured("gone", zone, "c1").await;
        h.configured("kept", zone, "c1").await;
    }
    // A group's deletion tears down all its placements: one `Teardown` with no zone, the one
    // trigger (the deployer's saga calls it; `GroupDeleted` on the bus is for other readers).
    let all = pb::TeardownRequest { group: "gone".into(), zone: String::new() };
    assert_eq!(h.client.teardown(all).await.unwrap().into_inner().placements.len(), 2);
    // Both first: what is left is checked group-wide, and the two finish in either order.
    for zone in ["local-a", "local-b"] {
        wait_done(&h, "gone", zone).await;
    }
    for zone in ["local-a", "local-b"] {
        assert_nothing_left(&mut h, "gone", zone).await;
    }
    assert_eq!(
        h.records(store::PLACEMENTS, "kept").await.len(),
        2,
        "another group's placements stay"
    );

    let delete = pb::DeleteZoneRequest { name: "local-b".into() };
    let progress = h.client.delete_zone(delete).await.unwrap().into_inner();
    assert_eq!(progress.teardowns.len(), 1);
    wait_done(&h, "kept", "local-b").await;
    let message = tokio::time::timeout(MINUTE, deleted.next()).await.unwrap().unwrap();
    assert_eq!(message.payload.zone, "local-b");
    // Published first, so a failed publish leaves the record to retry from: the record goes
    // right after.
    eventually("the zone record gone", MINUTE, || {
        let mut client = h.client.clone();
        async move {
            match client.get_zone(pb::GetZoneRequest { name: "local-b".into() }).await {
                Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert_eq!(h.records(store::PLACEMENTS, "kept").await, vec!["kept/local-a"]);
    assert!(!h.zones_dir().join("local-b").exists());

    // The last environment using local-a is deleted: the deployer tears down the zone it
    // released, and the group's placement there goes too.
    let released = pb::TeardownRequest { group: "kept".into(), zone: "local-a".into() };
    h.client.teardown(released).await.unwrap();
    wait_done(&h, "kept", "local-a").await;
    assert_nothing_left(&mut h, "kept", "local-a").await;
    h.stop().await;
}
