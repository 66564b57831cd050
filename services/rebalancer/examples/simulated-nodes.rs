//! Simulated worker nodes for the rebalancer benchmark (`e2e/bench/rebalancer-bench`): `--nodes`
//! nodes in cells of `--per-cell`, each publishing a `NodeLoadReport` every `--interval` on
//! core NATS, exactly as `services/runner/src/load.rs` does. The reports are spread evenly over
//! the interval (10,000 nodes every 2 s = 5,000 a second) and each carries a fresh random
//! in-flight count, so cells change state as the run goes. Prints a JSON summary.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use ramen_bus::auth::node_load_subject;
use ramen_bus::{Bus, PublishOptions, Schema, Subject};
use ramen_proto::common::v1::Track;
use ramen_proto::event::Event;
use ramen_proto::events::v1::{EventMeta, NodeLoadReport};
use rand::Rng;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    nats: String,
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    #[arg(long, default_value_t = 10)]
    per_cell: usize,
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    interval: Duration,
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
}

const CAP: u32 = 64;
/// Publishing in batches every few milliseconds keeps the pace even without a timer per node.
const BATCH_EVERY: Duration = Duration::from_millis(5);

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

fn report(node: usize, per_cell: usize, rng: &mut impl Rng) -> NodeLoadReport {
    let cell = node / per_cell;
    let now = now_ms();
    NodeLoadReport {
        meta: Some(EventMeta {
            event_id: uuid::Uuid::now_v7().to_string(),
            at_unix_ms: now,
            actor: "runner".into(),
            request_id: String::new(),
        }),
        node_id: format!("node-{node}"),
        group: format!("group-{}", cell / 10),
        zone: format!("zone-{}", cell % 10),
        track: Track::Worker as i32,
        in_flight: rng.gen_range(0..=CAP),
        cap: CAP,
        ready: true,
        loaded_commit: "c0ffee".into(),
        at_unix_ms: now,
        draining: false,
        runtime_restarts: 0,
    }
}

#[allow(clippy::print_stdout)] // The summary on stdout is this tool's output.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bus = Bus::connect(&args.nats, "simulated-nodes").await?;
    let batches_per_interval =
        (args.interval.as_millis() / BATCH_EVERY.as_millis()).max(1) as usize;
    let mut rng = rand::thread_rng();
    let started = Instant::now();
    let mut tick = tokio::time::interval(BATCH_EVERY);
    let (mut next_node, mut batch, mut published) = (0usize, 0usize, 0u64);
    while started.elapsed() < args.duration {
        tick.tick().await;
        // Nodes due in this batch: an even share of the interval's round.
        let end = args.nodes * (batch % batches_per_interval + 1) / batches_per_interval;
        while next_node < end {
            let report = report(next_node, args.per_cell, &mut rng);
            let subject = Subject::<NodeLoadReport>::new(
                node_load_subject(&report.group, &report.zone),
                Schema::new(NodeLoadReport::NAME, 1),
            );
            bus.publish_core(&subject, &report, PublishOptions::default()).await?;
            next_node += 1;
            published += 1;
        }
        batch += 1;
        if batch % batches_per_interval == 0 {
            next_node = 0;
        }
    }
    bus.client().flush().await?;
    let seconds = started.elapsed().as_secs_f64();
    // The summary is this tool's output (the bench script reads it).
    println!(
        "{}",
        serde_json::json!({"published": published, "seconds": seconds, "per_second": published as f64 / seconds})
    );
    Ok(())
}
