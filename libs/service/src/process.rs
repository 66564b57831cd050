//! The `main` of one service process (`ramen serve <svc>` and the per-service binaries):
//! config (exit 78 when unusable), telemetry, adapters, admin port, signals, drain.

use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use ramen_config::{Config, EXIT_CONFIG, Requirement};
use ramen_lifecycle::{Shutdown, listen_for_signals};

use crate::Platform;

/// A started service: its main listener and the task serving it.
pub struct Running {
    pub name: &'static str,
    pub addr: SocketAddr,
    handle: tokio::task::JoinHandle<()>,
}

impl Running {
    pub fn new(name: &'static str, addr: SocketAddr, handle: tokio::task::JoinHandle<()>) -> Self {
        Self { name, addr, handle }
    }

    /// Waits for the server task (its listener stops with the platform's shutdown).
    pub async fn join(self, deadline: Duration) {
        if tokio::time::timeout(deadline, self.handle).await.is_err() {
            tracing::warn!(service = self.name, "did not stop within {deadline:?}");
        }
    }
}

/// A control-plane process holds the signing and sealing keys in memory: no other process of
/// its user (a group's code among them, where it runs as the same user) may read them out of
/// `/proc/<pid>/mem` or `environ`, nor from a core file.
pub fn forbid_dumping(who: &str) {
    if let Err(err) = ramen_sandbox::forbid_dumping() {
        eprintln!("{who}: cannot make the process undumpable: {err}");
    }
}

/// Runs one service in its own process until SIGTERM, then drains.
pub fn main<F, Fut, E>(name: &'static str, needs: &[Requirement], start: F) -> ExitCode
where
    F: FnOnce(Platform) -> Fut,
    Fut: Future<Output = Result<Running, E>>,
    E: std::fmt::Display,
{
    let config = match Config::load_for(needs) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("ramen {name}: {err}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    forbid_dumping(&format!("ramen {name}"));
    if config.nats.url.is_empty() {
        eprintln!(
            "ramen {name}: RAMEN_NATS_URL is required to run one service on its own (`ramen up` runs everything with its own NATS)"
        );
        return ExitCode::from(EXIT_CONFIG as u8);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen {name}: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(name, config, start))
}

async fn run<F, Fut, E>(name: &'static str, config: Config, start: F) -> ExitCode
where
    F: FnOnce(Platform) -> Fut,
    Fut: Future<Output = Result<Running, E>>,
    E: std::fmt::Display,
{
    let mut telemetry = match ramen_telemetry::init(&format!("ramen-{name}"), &config.log) {
        Ok(telemetry) => telemetry,
        Err(err) => {
            eprintln!("ramen {name}: {err}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    let shutdown = Shutdown::new();
    if let Err(err) = listen_for_signals(shutdown.clone()) {
        tracing::error!(%err, "cannot install signal handlers");
        return ExitCode::FAILURE;
    }
    let url = config.nats.url.clone();
    let drain = config.drain.timeout;
    let platform = match Platform::open(config, &url, shutdown.clone()).await {
        Ok(platform) => platform,
        Err(err) => {
            tracing::error!(%err, "cannot open the adapters");
            return ExitCode::FAILURE;
        }
    };
    let startup = ramen_lifecycle::Startup::default();
    platform.health.add(startup.clone());
    let admin = match platform.serve_admin().await {
        Ok((addr, _task)) => addr,
        Err(err) => {
            tracing::error!(%err, "cannot serve the admin port");
            return ExitCode::FAILURE;
        }
    };
    let running = match start(platform.clone()).await {
        Ok(running) => running,
        Err(err) => {
            tracing::error!(%err, service = name, "did not start");
            return ExitCode::FAILURE;
        }
    };
    startup.done();
    tracing::info!(service = name, addr = %running.addr, %admin, "serving");
    shutdown.wait().await;
    platform.health.set_draining();
    running.join(drain).await;
    if let Err(err) = platform.tasks.shutdown(drain).await {
        tracing::warn!(%err, "background tasks did not stop in time");
    }
    telemetry.shutdown();
    ExitCode::SUCCESS
}
