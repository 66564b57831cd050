//! Events are claims, not orders: a `ZoneDeleted` for a zone whose record says it lives (any
//! client of the bus can publish one, with a current time) changes nothing, nor does a stale one
//! for a zone made again since; one the zone's record agrees with (the zone being deleted, or
//! gone) still tears down what is left of it. Each assertion waits until the consumer has
//! provably settled the event (its durable has nothing pending nor unacknowledged).

use std::time::Duration;

use ramen_bus::PublishOptions;
use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::eventually;
use ramen_zone_manager::store::{self, Db};

use crate::support::{Harness, pids_under};

const MINUTE: Duration = Duration::from_secs(60);
const DURABLE: &str = "zone-manager-zone-deleted";

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Publishes `ZoneDeleted` for `zone` as of `at_unix_ms`, as anyone on the bus could.
async fn publish_zone_deleted(h: &Harness, zone: &str, at_unix_ms: i64) {
    let event = ev::ZoneDeleted {
        meta: Some(ev::EventMeta {
            event_id: uuid::Uuid::now_v7().to_string(),
            at_unix_ms,
            actor: "zone-manager".into(),
            request_id: String::new(),
        }),
        zone: zone.into(),
        provider: common::Provider::Local as i32,
    };
    let id = event.meta.as_ref().unwrap().event_id.clone();
    let subject = ramen_service::subject::<ev::ZoneDeleted>();
    h.platform.bus.publish(&subject, &event, PublishOptions::with_msg_id(id)).await.unwrap();
}

/// Every `ZoneDeleted` published so far was handled and acknowledged (or terminated): none is
/// waiting for delivery, none delivered and unsettled.
async fn settled(h: &Harness) {
    let stream = h.platform.config.nats.events_stream.clone();
    eventually("the zone-deleted consumer settled every event", MINUTE, || {
        let (bus, stream) = (h.platform.bus.clone(), stream.clone());
        async move {
            let backlog =
                bus.consumer_backlog(&stream, DURABLE).await.map_err(|e| e.to_string())?;
            if backlog.pending == 0 && backlog.ack_pending == 0 {
                Ok(())
            } else {
                Err(format!("pending {}, unacknowledged {}", backlog.pending, backlog.ack_pending))
            }
        }
    })
    .await;
}

fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

async fn teardown_done(h: &Harness, group: &str, zone: &str) {
    eventually(&format!("the teardown of {group} in {zone} done"), MINUTE, || {
        let mut client = h.client.clone();
        async move {
            let request = pb::TeardownRequest { group: group.into(), zone: zone.into() };
            let progress = client.get_teardown(request).await.map_err(|e| e.to_string())?;
            match progress.into_inner().placements.first() {
                Some(p) if p.state == pb::TeardownState::Done as i32 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_forged_or_stale_zone_deleted_leaves_a_live_zone_alone() {
    let mut h = Harness::start().await;
    h.configured("victim", "local-a", "c1").await;
    assert!(h.restart("victim", "local-a", common::Track::Worker, MINUTE).await.ready);
    let pids = pids_under(&h.placement_dir("victim", "local-a"));
    assert!(!pids.is_empty());
    let before: Vec<String> =
        h.workers("victim", "local-a").await.into_iter().map(|w| w.id).collect();

    // Forged: current time, the zone alive. Stale: from before the zone was made.
    publish_zone_deleted(&h, "local-a", now_ms()).await;
    publish_zone_deleted(&h, "local-a", 1).await;
    settled(&h).await;

    assert_eq!(h.records(store::TEARDOWNS, "victim").await, Vec::<String>::new(), "no teardown");
    assert_eq!(h.records(store::PLACEMENTS, "victim").await, vec!["victim/local-a"]);
    let placement = h
        .client
        .get_placement(pb::GetPlacementRequest { group: "victim".into(), zone: "local-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(placement.status(), common::PlacementStatus::TearingDown, "{placement:?}");
    let after: Vec<String> =
        h.workers("victim", "local-a").await.into_iter().map(|w| w.id).collect();
    assert_eq!(after, before, "the same workers");
    assert!(pids.iter().all(|pid| alive(*pid)), "every worker process still runs");
    h.stop().await;
}

#[tokio::test]
async fn a_zone_deleted_the_record_agrees_with_still_tears_down() {
    let mut h = Harness::start().await;
    for zone in ["local-b", "local-c"] {
        h.configured("team", zone, "c1").await;
    }
    assert!(h.restart("team", "local-b", common::Track::Worker, MINUTE).await.ready);
    assert!(!pids_under(&h.placement_dir("team", "local-b")).is_empty());
    // As if the zone's deletion had stopped short of its teardowns: `local-b` marked deleting,
    // `local-c`'s record already gone, each with its placement left.
    let db = Db::open(h.platform.store.clone()).await.unwrap();
    db.zones
        .modify("local-b", |zone| {
            zone.deleting = true;
            Ok::<_, ramen_store::StoreError>(())
        })
        .await
        .unwrap();
    assert!(db.zones.delete("local-c", None).await.unwrap());

    publish_zone_deleted(&h, "local-b", now_ms()).await;
    publish_zone_deleted(&h, "local-c", now_ms()).await;
    settled(&h).await;
    for zone in ["local-b", "local-c"] {
        teardown_done(&h, "team", zone).await;
    }
    assert_eq!(h.records(store::PLACEMENTS, "team").await, Vec::<String>::new());
    assert!(pids_under(&h.zones_dir()).is_empty(), "the workers are gone");
    h.stop().await;
}
