use std::time::Duration;

use ramen_bus::{Bus, ConsumerSpec, Delivery, Schema, Subject, WorkConsumer, WorkStreamSpec};
use ramen_testkit::Nats;
use serde::{Deserialize, Serialize};

pub struct Env {
    pub bus: Bus,
    pub _nats: Nats,
}

impl Env {
    pub async fn start() -> anyhow::Result<Env> {
        let nats = Nats::start().await?;
        let bus = Bus::connect(&nats.url(), "conformance").await?;
        Ok(Env { bus, _nats: nats })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: u32,
    pub name: String,
}

pub fn job(id: u32) -> Job {
    Job { id, name: format!("job-{id}") }
}

pub const JOB_SCHEMA: Schema = Schema::new("ramen.test.v1.Job", 2);

/// `test.<name>` carrying [`Job`]s.
pub fn subject(name: &str) -> Subject<Job> {
    Subject::new(format!("test.{name}"), JOB_SCHEMA)
}

pub fn dlq_name(name: &str) -> String {
    format!("{}_DLQ", name.to_uppercase())
}

/// Work stream `<NAME>` on `test.<name>.>` with DLQ `<NAME>_DLQ`.
pub async fn work_stream(bus: &Bus, name: &str) -> anyhow::Result<()> {
    bus.ensure_work_stream(&WorkStreamSpec {
        name: name.to_uppercase(),
        subjects: vec![format!("test.{name}.>")],
        duplicate_window: Duration::from_secs(60),
        dlq_name: dlq_name(name),
        ..WorkStreamSpec::default()
    })
    .await?;
    Ok(())
}

pub async fn consumer(
    bus: &Bus,
    name: &str,
    ack_wait: Duration,
    max_deliver: i64,
) -> anyhow::Result<WorkConsumer<Job>> {
    let spec = ConsumerSpec {
        stream: name.to_uppercase(),
        durable: format!("{name}-worker"),
        ack_wait,
        max_deliver,
        ..ConsumerSpec::default()
    };
    Ok(bus.work_consumer(spec, &subject(name).all_children()).await?)
}

pub fn scaled(d: Duration) -> Duration {
    d.mul_f64(ramen_testkit::patience())
}

/// The next delivery within `within` (scaled by the test patience), or `None`.
pub async fn next_within(
    consumer: &mut WorkConsumer<Job>,
    within: Duration,
) -> anyhow::Result<Option<Delivery<Job>>> {
    match tokio::time::timeout(scaled(within), consumer.next()).await {
        Ok(delivery) => Ok(Some(delivery?)),
        Err(_) => Ok(None),
    }
}

pub async fn expect_next(
    consumer: &mut WorkConsumer<Job>,
    within: Duration,
) -> anyhow::Result<Delivery<Job>> {
    next_within(consumer, within)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no delivery within {within:?}"))
}

/// Messages still stored in a stream.
pub async fn stored(bus: &Bus, stream: &str) -> anyhow::Result<u64> {
    let mut stream = bus.jetstream().get_stream(stream).await?;
    Ok(stream.info().await?.state.messages)
}
