use std::time::Duration;

use anyhow::{bail, ensure};
use bytes::Bytes;
use ramen_bus::{Bus, BusError, HeaderMap, MAX_DELIVERIES_REASON, PublishOptions, headers};
use ramen_testkit::eventually;
use tokio_util::sync::CancellationToken;

use crate::support::{
    JOB_SCHEMA, consumer, expect_next, job, next_within, stored, subject, work_stream,
};

const SECOND: Duration = Duration::from_secs(1);

pub async fn handler_dead_letters_on_last_attempt(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "lastattempt").await?;
    let mut worker = consumer(bus, "lastattempt", SECOND, 2).await?;
    let ack = bus
        .publish(&subject("lastattempt").child("g1"), &job(1), PublishOptions::with_msg_id("j-1"))
        .await?;
    // The handler "fails" every time; it naks until its last attempt, then parks the job.
    loop {
        let delivery = expect_next(&mut worker, 5 * SECOND).await?;
        if !delivery.is_last_attempt() {
            delivery.nak(None).await?;
            continue;
        }
        assert_eq!(delivery.delivered(), 2);
        delivery.dead_letter("handler failed: boom").await?;
        break;
    }
    ensure!(next_within(&mut worker, 2 * SECOND).await?.is_none(), "delivered after parking");
    assert_eq!(stored(bus, "LASTATTEMPT").await?, 0);

    let parked = bus.dlq("LASTATTEMPT_DLQ").list(10).await?;
    assert_eq!(parked.len(), 1);
    let p = &parked[0];
    assert_eq!(p.reason, "handler failed: boom");
    assert_eq!(p.deliveries, 2);
    assert_eq!(p.original_subject, "test.lastattempt.g1");
    assert_eq!(p.original_stream, "LASTATTEMPT");
    assert_eq!(p.original_sequence, ack.sequence);
    assert_eq!(p.original_msg_id.as_deref(), Some("j-1"));
    assert_eq!(headers::schema_of(&p.headers), Some((JOB_SCHEMA.name.into(), JOB_SCHEMA.version)));
    assert_eq!(
        headers::get(&p.headers, headers::DLQ_REASON).as_deref(),
        Some("handler failed: boom")
    );
    assert_eq!(serde_json::from_slice::<crate::support::Job>(&p.payload)?, job(1));
    Ok(())
}

pub async fn advisory_dead_letters_unsettled_last_delivery(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "advisory").await?;
    let cancel = CancellationToken::new();
    let mover = bus.dead_letter_mover("ADVISORY").await?;
    assert_eq!(mover.name(), "dlq-mover:ADVISORY");
    let mover_task = tokio::spawn(mover.run(cancel.clone()));

    let mut worker = consumer(bus, "advisory", SECOND, 2).await?;
    let ack = bus
        .publish(&subject("advisory").child("g1"), &job(2), PublishOptions::with_msg_id("j-2"))
        .await?;
    // Both deliveries go unsettled, as if the process died during each attempt.
    for attempt in 1..=2 {
        let delivery = expect_next(&mut worker, 5 * SECOND).await?;
        assert_eq!(delivery.delivered(), attempt);
    }
    let dlq = bus.dlq("ADVISORY_DLQ");
    let parked = eventually("advisory parks the message", 15 * SECOND, || async {
        let parked = dlq.list(10).await?;
        if parked.is_empty() { bail!("DLQ still empty") } else { Ok(parked) }
    })
    .await;
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].reason, MAX_DELIVERIES_REASON);
    assert_eq!(parked[0].deliveries, 2);
    assert_eq!(parked[0].original_sequence, ack.sequence);
    assert_eq!(parked[0].original_subject, "test.advisory.g1");
    assert_eq!(parked[0].original_msg_id.as_deref(), Some("j-2"));
    eventually("work stream emptied", 5 * SECOND, || async {
        let left = stored(bus, "ADVISORY").await?;
        if left == 0 { Ok(()) } else { bail!("{left} left in the work stream") }
    })
    .await;
    ensure!(next_within(&mut worker, 2 * SECOND).await?.is_none(), "delivered after max_deliver");

    cancel.cancel();
    tokio::time::timeout(5 * SECOND, mover_task).await??;
    Ok(())
}

pub async fn undecodable_message_is_parked(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "poison").await?;
    let mut worker = consumer(bus, "poison", Duration::from_secs(30), 5).await?;
    bus.jetstream().publish("test.poison.a", Bytes::from_static(b"{not json")).await?.await?;
    bus.publish(&subject("poison").child("a"), &job(3), PublishOptions::default()).await?;
    // The poison message never reaches the handler; the good one behind it does.
    let delivery = expect_next(&mut worker, 5 * SECOND).await?;
    assert_eq!(delivery.payload, job(3));
    delivery.ack().await?;
    let parked = bus.dlq("POISON_DLQ").list(10).await?;
    assert_eq!(parked.len(), 1);
    assert!(parked[0].reason.contains("decoding"), "{}", parked[0].reason);
    assert_eq!(parked[0].payload.as_ref(), b"{not json");
    Ok(())
}

pub async fn list_replay_discard(bus: &Bus) -> anyhow::Result<()> {
    work_stream(bus, "replay").await?;
    // max_deliver 1: the first attempt is the last, so a failing handler parks at once.
    let mut worker = consumer(bus, "replay", SECOND, 1).await?;
    let mut extra = HeaderMap::new();
    extra.insert("X-Group", "g1");
    for id in [10, 11] {
        let options = PublishOptions {
            msg_id: Some(format!("j-{id}")),
            headers: Some(extra.clone()),
            ..Default::default()
        };
        bus.publish(&subject("replay").child("g1"), &job(id), options).await?;
        let delivery = expect_next(&mut worker, 5 * SECOND).await?;
        assert!(delivery.is_last_attempt());
        delivery.dead_letter("dependency down").await?;
    }
    let dlq = bus.dlq("REPLAY_DLQ");
    let parked = dlq.list(10).await?;
    assert_eq!(
        parked.iter().map(|p| p.original_msg_id.clone()).collect::<Vec<_>>(),
        vec![Some("j-10".to_owned()), Some("j-11".to_owned())]
    );
    assert_eq!(dlq.list(1).await?.len(), 1, "list honours its limit");

    let replayed = dlq.replay(parked[0].sequence).await?;
    assert!(!replayed.duplicate);
    let delivery = expect_next(&mut worker, 5 * SECOND).await?;
    assert_eq!(delivery.payload, job(10));
    assert_eq!(delivery.delivered(), 1, "a replay gets a full set of attempts");
    assert!(
        delivery.msg_id().is_some_and(|id| id.starts_with("replay:")),
        "{:?}",
        delivery.msg_id()
    );
    assert_eq!(headers::get(delivery.headers(), "X-Group").as_deref(), Some("g1"));
    assert!(headers::get(delivery.headers(), headers::DLQ_REASON).is_none());
    delivery.ack().await?;

    let left = dlq.list(10).await?;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].original_msg_id.as_deref(), Some("j-11"));
    dlq.discard(left[0].sequence).await?;
    assert!(dlq.list(10).await?.is_empty());
    assert!(matches!(dlq.discard(left[0].sequence).await, Err(BusError::NotFound { .. })));
    assert!(matches!(dlq.replay(left[0].sequence).await, Err(BusError::NotFound { .. })));
    Ok(())
}
