//! Service users: what each service's code does works; the rest is refused.

use std::time::Duration;

use bytes::Bytes;
use ramen_bus::auth::{Role, node_load_subject};
use ramen_bus::testing::OperatorNats;
use ramen_bus::{
    Bus, ConsumerSpec, EventStreamSpec, KvSpec, Lease, PublishOptions, Schema, Subject,
    WorkStreamSpec,
};
use serde_json::{Value, json};

use crate::support::{assert_refused, refused_publish};

fn subject(name: &str) -> Subject<Value> {
    Subject::new(name, Schema::new("ramen.test.v1.Any", 1))
}

async fn events_stream(bus: &Bus) -> anyhow::Result<()> {
    let spec = EventStreamSpec {
        name: "RAMEN_EVENTS".into(),
        subjects: vec!["ramen.events.v1.>".into()],
        ..EventStreamSpec::default()
    };
    Ok(bus.ensure_event_stream(&spec).await?)
}

/// The deployer's job queue end to end under its own user: streams, a work item, a parked
/// dead letter, its replay, the mover, a job lease and an event.
#[tokio::test]
async fn the_deployer_runs_its_queue_and_cannot_touch_the_rest() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let bus = nats.connect(Role::Deployer).await?;
    events_stream(&bus).await?;
    bus.ensure_work_stream(&WorkStreamSpec {
        name: "RAMEN_JOBS".into(),
        subjects: vec!["ramen.jobs.v1.deploy".into()],
        dlq_name: "RAMEN_JOBS_DLQ".into(),
        ..WorkStreamSpec::default()
    })
    .await?;
    let work = subject("ramen.jobs.v1.deploy");
    bus.publish(&work, &json!({"job": 1}), PublishOptions::with_msg_id("j-1")).await?;
    let spec = ConsumerSpec {
        stream: "RAMEN_JOBS".into(),
        durable: "deployer-jobs".into(),
        max_deliver: 1,
        ..ConsumerSpec::default()
    };
    let mut consumer = bus.work_consumer(spec, &work).await?;
    let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next()).await??;
    assert!(delivery.is_last_attempt());
    delivery.dead_letter("the test parks it").await?;
    let dlq = bus.dlq("RAMEN_JOBS_DLQ");
    let parked = dlq.list(10).await?;
    assert_eq!(parked.len(), 1);
    dlq.replay(parked[0].sequence).await?;
    let again = tokio::time::timeout(Duration::from_secs(10), consumer.next()).await??;
    again.ack().await?;
    assert_eq!(bus.consumer_backlog("RAMEN_JOBS", "deployer-jobs").await?.pending, 0);
    drop(bus.dead_letter_mover("RAMEN_JOBS").await?);
    let kv = bus.kv(&KvSpec { bucket: "ramen-job-locks".into(), ..KvSpec::default() }).await?;
    let mut lease = Lease::acquire(&kv, "job.j-1", "deployer-a").await?;
    lease.refresh().await?;
    lease.release().await?;
    let finished = subject("ramen.events.v1.deploy.finished");
    bus.publish(&finished, &json!({}), PublishOptions::with_msg_id("e-1")).await?;
    assert!(bus.permission_denials().is_empty(), "{:?}", bus.permission_denials());

    for subject in [
        "$JS.API.STREAM.DELETE.RAMEN_JOBS",
        "$JS.API.STREAM.PURGE.RAMEN_JOBS",
        "$JS.API.STREAM.DELETE.RAMEN_EVENTS",
        "$JS.API.STREAM.DELETE.KV_ramen-job-locks",
        "ramen.events.v1.zone.deleted",
        "$JS.API.CONSUMER.CREATE.RAMEN_EVENTS.zone-manager-zone-deleted",
        "$KV.ramen-rebalancer-lease.leader",
    ] {
        refused_publish(&bus, subject).await;
    }
    let _spy = bus.client().subscribe("_INBOX_zone-manager.>").await?;
    bus.client().flush().await?;
    assert_refused(&bus, "subscription", "_INBOX_zone-manager.>").await;
    Ok(())
}

#[tokio::test]
async fn the_zone_manager_consumes_its_events_and_publishes_only_its_own() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let bus = nats.connect(Role::ZoneManager).await?;
    events_stream(&bus).await?;
    let deleted = subject("ramen.events.v1.zone.deleted");
    let spec = ConsumerSpec {
        stream: "RAMEN_EVENTS".into(),
        durable: "zone-manager-zone-deleted".into(),
        ..ConsumerSpec::default()
    };
    let mut consumer = bus.work_consumer(spec, &deleted).await?;
    bus.publish(&deleted, &json!({"zone": "z1"}), PublishOptions::with_msg_id("z-1")).await?;
    let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next()).await??;
    delivery.ack().await?;
    assert!(bus.permission_denials().is_empty(), "{:?}", bus.permission_denials());

    for subject in [
        "ramen.events.v1.deploy.finished",
        "ramen.jobs.v1.deploy",
        "$JS.API.STREAM.DELETE.RAMEN_EVENTS",
        "$JS.API.CONSUMER.CREATE.RAMEN_JOBS.deployer-jobs",
        "$KV.ramen-job-locks.job.j-1",
        &node_load_subject("docs", "z1"),
    ] {
        refused_publish(&bus, subject).await;
    }
    Ok(())
}

#[tokio::test]
async fn the_rebalancer_reads_load_and_keeps_its_lease_but_not_job_leases() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let bus = nats.connect(Role::Rebalancer).await?;
    let mut reports = bus.subscribe(&subject("ramen.load.v1.node.>")).await?;
    bus.client().flush().await?;
    let node = nats.node_minter().mint("docs", "z1")?;
    let node = Bus::connect_as(&nats.url(), "runner", Some(&node)).await?;
    node.publish_core(&subject(&node_load_subject("docs", "z1")), &json!({}), Default::default())
        .await?;
    let report = tokio::time::timeout(Duration::from_secs(5), reports.next()).await?;
    assert_eq!(report.map(|r| r.subject), Some(node_load_subject("docs", "z1")));
    let lease = KvSpec { bucket: "ramen-rebalancer-lease".into(), ..KvSpec::default() };
    let kv = bus.kv(&lease).await?;
    Lease::acquire(&kv, "leader", "rebalancer-a").await?;
    let state = KvSpec { bucket: "ramen-rebalancer-state".into(), ..KvSpec::default() };
    bus.kv(&state).await?.put("last-run", Bytes::from_static(b"{}")).await?;
    assert!(bus.permission_denials().is_empty(), "{:?}", bus.permission_denials());

    for subject in [
        "$KV.ramen-job-locks.job.j-1",
        "$JS.API.STREAM.CREATE.KV_ramen-job-locks",
        "ramen.events.v1.zone.deleted",
        "$JS.API.STREAM.DELETE.RAMEN_EVENTS",
    ] {
        refused_publish(&bus, subject).await;
    }
    Ok(())
}

#[tokio::test]
async fn auth_and_the_gateway_publish_only_what_they_own() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let auth = nats.connect(Role::Auth).await?;
    events_stream(&auth).await?;
    let audit = subject("ramen.events.v1.audit.appended");
    auth.publish(&audit, &json!({}), PublishOptions::with_msg_id("a-1")).await?;
    refused_publish(&auth, "ramen.events.v1.group.deleted").await;
    refused_publish(&auth, "$JS.API.STREAM.DELETE.RAMEN_EVENTS").await;

    let gateway = nats.connect(Role::ApiGateway).await?;
    gateway.ping(Duration::from_secs(5)).await?;
    refused_publish(&gateway, "ramen.events.v1.audit.appended").await;
    refused_publish(&gateway, "$JS.API.INFO").await;
    Ok(())
}

/// The tables name real event subjects, and every event has a publisher allowed to send it.
#[test]
fn the_permission_tables_follow_the_event_catalogue() {
    use std::collections::BTreeSet;
    let names = ramen_bus::auth::BusNames::default();
    let granted: BTreeSet<String> = Role::ALL
        .into_iter()
        .flat_map(|role| role.permissions(&names).publish.allow)
        .filter(|s| s.starts_with("ramen.events."))
        .collect();
    let events: BTreeSet<String> = ramen_proto::event::ALL
        .iter()
        .map(|(_, subject)| subject.to_string())
        .filter(|s| s.starts_with("ramen.events."))
        .collect();
    assert_eq!(granted, events);
    let control = Role::ControlPlane.permissions(&names);
    for role in Role::SERVICES {
        for subject in role.permissions(&names).publish.allow {
            assert!(control.publish.allow.contains(&subject), "control-plane lacks {subject}");
        }
    }
}
