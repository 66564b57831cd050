//! The receiving end of call records for `e2e/bench/calls-bench`: a real `nats-server` with
//! JetStream and the real auth service on the embedded store, whose ingest stores every batch a
//! node publishes. Prints `{"nats_url": …}` once ready; when its stdin closes, waits until the
//! calls stream is empty and prints what was stored: the records, the store's size on disk,
//! and this process's CPU per record (NATS runs in its own process, not counted here).
//!
//!     calls-sink    (then point a node's `nats_url` at the printed URL)

use std::time::{Duration, Instant};

use base64::Engine;
use ramen_bus::auth::CALLS_STREAM;
use ramen_config::{Config, Secret};
use ramen_lifecycle::Shutdown;
use ramen_service::Platform;
use ramen_store::Filter;
use tokio::io::AsyncReadExt;

fn cpu() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    time(usage.user_time()) + time(usage.system_time())
}

fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

// Its output is what the bench script reads.
#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let nats = ramen_testkit::Nats::start().await?;
    let dir = tempfile::tempdir()?;
    let mut config = Config { data_dir: dir.path().to_path_buf(), ..Config::default() };
    let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    config.listen.auth = any;
    config.listen.admin = any;
    config.auth.jwt_secret = Secret::new("calls-bench-signing-key-that-is-long-enough-0123");
    config.auth.secrets_key =
        Secret::new(base64::engine::general_purpose::STANDARD.encode([7u8; 32]));
    let platform = Platform::open(config, &nats.url(), Shutdown::new()).await?;
    let _auth = ramen_auth::launch(platform.clone()).await?;
    println!("{}", serde_json::json!({ "nats_url": nats.url() }));

    let started_cpu = cpu();
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;

    // Drained: the stream holds nothing (a work queue loses each batch once auth acked it).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut stream = platform.bus.jetstream().get_stream(CALLS_STREAM).await?;
        let left = stream.info().await?.state.messages;
        if left == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let records = platform.store.count("auth_calls", &Filter::new()).await?;
    let cpu_us = (cpu() - started_cpu).as_micros() as u64;
    let bytes = dir_size(&dir.path().join("store"));
    println!(
        "{}",
        serde_json::json!({
            "records": records,
            "store_bytes": bytes,
            "bytes_per_record": bytes.checked_div(records).unwrap_or(0),
            "auth_cpu_us_per_record": cpu_us.checked_div(records).unwrap_or(0),
        })
    );
    Ok(())
}
