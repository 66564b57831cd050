use std::time::{Duration, Instant};

use anyhow::ensure;
use futures::StreamExt;
use ramen_bus::{Bus, HeaderMap, PublishOptions, headers};
use ramen_testkit::eventually;

use crate::support::{
    JOB_SCHEMA, consumer, expect_next, job, next_within, stored, subject, work_stream,
};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const SECOND: Duration = Duration::from_secs(1);

pub async fn round_trip_with_typed_headers(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "roundtrip").await?;
    let mut worker = consumer(bus, "roundtrip", Duration::from_secs(30), 3).await?;
    let mut extra = HeaderMap::new();
    extra.insert("X-Group", "g1");
    let options = PublishOptions {
        msg_id: Some("job-7".into()),
        headers: Some(extra),
        traceparent: Some(TRACEPARENT.into()),
    };
    let ack = bus.publish(&subject("roundtrip").child("g1"), &job(7), options).await?;
    ensure!(!ack.duplicate && ack.stream == "ROUNDTRIP", "{ack:?}");

    let delivery = expect_next(&mut worker, 5 * SECOND).await?;
    assert_eq!(delivery.payload, job(7));
    assert_eq!(delivery.subject(), "test.roundtrip.g1");
    assert_eq!(delivery.schema(), Some((JOB_SCHEMA.name.to_owned(), JOB_SCHEMA.version)));
    assert_eq!(delivery.traceparent().as_deref(), Some(TRACEPARENT));
    assert_eq!(delivery.msg_id().as_deref(), Some("job-7"));
    assert_eq!(headers::get(delivery.headers(), "X-Group").as_deref(), Some("g1"));
    assert_eq!((delivery.delivered(), delivery.stream_sequence()), (1, ack.sequence));
    assert!(!delivery.is_last_attempt());
    delivery.ack().await?;
    // Work-queue retention: the acked message is gone from the stream.
    eventually("acked message removed", 5 * SECOND, || async {
        stored(bus, "ROUNDTRIP")
            .await
            .and_then(|n| if n == 0 { Ok(()) } else { anyhow::bail!("{n} left") })
    })
    .await;
    Ok(())
}

pub async fn redelivery_after_ack_wait(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "redeliver").await?;
    let mut worker = consumer(bus, "redeliver", SECOND, 5).await?;
    bus.publish(&subject("redeliver").child("a"), &job(1), PublishOptions::default()).await?;
    let first = expect_next(&mut worker, 5 * SECOND).await?;
    let received = Instant::now();
    drop(first); // never settled: the server must send it again once ack_wait runs out
    let second = expect_next(&mut worker, 10 * SECOND).await?;
    assert_eq!(second.payload, job(1));
    assert_eq!(second.delivered(), 2);
    assert!(received.elapsed() >= Duration::from_millis(900), "{:?}", received.elapsed());
    second.ack().await?;
    Ok(())
}

pub async fn nak_with_delay(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "nak").await?;
    let mut worker = consumer(bus, "nak", Duration::from_secs(30), 5).await?;
    bus.publish(&subject("nak").child("a"), &job(2), PublishOptions::default()).await?;
    let first = expect_next(&mut worker, 5 * SECOND).await?;
    let nacked = Instant::now();
    first.nak(Some(Duration::from_millis(1500))).await?;
    let second = expect_next(&mut worker, 10 * SECOND).await?;
    let waited = nacked.elapsed();
    assert!(waited >= Duration::from_millis(1400), "redelivered after only {waited:?}");
    assert!(waited < Duration::from_secs(25), "redelivered by ack_wait, not the nak: {waited:?}");
    assert_eq!(second.delivered(), 2);
    second.ack().await?;
    Ok(())
}

pub async fn in_progress_extends_ack_wait(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "progress").await?;
    let ack_wait = 2 * SECOND;
    let mut worker = consumer(bus, "progress", ack_wait, 5).await?;
    bus.publish(&subject("progress").child("a"), &job(3), PublishOptions::default()).await?;
    let delivery = expect_next(&mut worker, 5 * SECOND).await?;
    // Two and a half ack-waits of work, kept alive by a heartbeat at a quarter of ack_wait
    // (not scaled by the test patience: a slower beat is what this test must not do).
    let started = Instant::now();
    while started.elapsed() < ack_wait * 5 / 2 {
        delivery.in_progress().await?;
        if let Ok(again) = tokio::time::timeout(ack_wait / 4, worker.next()).await {
            anyhow::bail!("redelivered during in-progress work: delivered={}", again?.delivered());
        }
    }
    delivery.ack().await?;
    ensure!(next_within(&mut worker, 3 * SECOND).await?.is_none(), "redelivered after ack");
    Ok(())
}

pub async fn term_stops_redelivery(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "term").await?;
    let mut worker = consumer(bus, "term", SECOND, 5).await?;
    bus.publish(&subject("term").child("a"), &job(4), PublishOptions::default()).await?;
    expect_next(&mut worker, 5 * SECOND).await?.term().await?;
    ensure!(next_within(&mut worker, 3 * SECOND).await?.is_none(), "redelivered after term");
    ensure!(bus.dlq("TERM_DLQ").list(10).await?.is_empty(), "term must not park a copy");
    Ok(())
}

pub async fn dedupe_of_republished_msg_id(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "dedupe").await?;
    let worker = consumer(bus, "dedupe", SECOND, 5).await?;
    let subject = subject("dedupe").child("a");
    let first = bus.publish(&subject, &job(5), PublishOptions::with_msg_id("deploy-42")).await?;
    let again = bus.publish(&subject, &job(5), PublishOptions::with_msg_id("deploy-42")).await?;
    assert!(!first.duplicate);
    assert!(again.duplicate, "{again:?}");
    assert_eq!(again.sequence, first.sequence);
    let other = bus.publish(&subject, &job(6), PublishOptions::with_msg_id("deploy-43")).await?;
    assert!(!other.duplicate);

    // Read through the Stream interface; a third item must not arrive.
    let mut deliveries = Box::pin(worker.into_stream());
    let mut seen = Vec::new();
    while let Ok(Some(delivery)) = tokio::time::timeout(2 * SECOND, deliveries.next()).await {
        let delivery = delivery?;
        seen.push(delivery.payload.id);
        delivery.ack().await?;
    }
    assert_eq!(seen, vec![5, 6]);
    Ok(())
}

pub async fn core_publish_subscribe(bus: &Bus) -> anyhow::Result<()> {
    let subject = subject("load").child("node-1");
    let mut subscription = bus.subscribe(&subject).await?;
    bus.client().flush().await?; // the SUB reaches the server before the PUB
    let options = PublishOptions { traceparent: Some(TRACEPARENT.into()), ..Default::default() };
    bus.publish_core(&subject, &job(8), options).await?;
    let message = tokio::time::timeout(5 * SECOND, subscription.next())
        .await?
        .ok_or_else(|| anyhow::anyhow!("subscription closed"))?;
    assert_eq!(message.payload, job(8));
    assert_eq!(message.subject, "test.load.node-1");
    assert_eq!(message.traceparent().as_deref(), Some(TRACEPARENT));
    Ok(())
}

pub async fn backlog_counts_pending_and_unacked(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "backlog").await?;
    let mut worker = consumer(bus, "backlog", Duration::from_secs(30), 3).await?;
    for i in 0..3 {
        bus.publish(&subject("backlog").child("a"), &job(i), PublishOptions::default()).await?;
    }
    let first = expect_next(&mut worker, 5 * SECOND).await?;
    // The pull may have fetched more than one; what the server counts is what matters.
    let backlog = bus.consumer_backlog("BACKLOG", "backlog-worker").await?;
    ensure!(backlog.pending + backlog.ack_pending == 3 && backlog.ack_pending >= 1, "{backlog:?}");
    first.ack().await?;
    eventually("the acked message leaves the backlog", 5 * SECOND, || async {
        let b = bus.consumer_backlog("BACKLOG", "backlog-worker").await?;
        if b.pending + b.ack_pending == 2 { Ok(()) } else { anyhow::bail!("{b:?}") }
    })
    .await;
    let missing = bus.consumer_backlog("BACKLOG", "nobody").await.unwrap_err();
    ensure!(missing.to_string().contains("nobody"), "{missing}");
    Ok(())
}
