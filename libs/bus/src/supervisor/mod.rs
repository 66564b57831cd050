//! `ramen up`'s bus: a real `nats-server -js` child, restarted with backoff when it dies.

mod binary;
mod child;
mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use binary::{MIN_VERSION, NATS_SERVER_PACKAGE, parse_version};
use child::{Launch, Running};

use crate::error::{BusError, Result};

#[derive(Clone, Debug)]
pub struct SupervisorConfig {
    /// JetStream store in `<data_dir>/nats`; an installed binary in `<data_dir>/tools/venv`.
    pub data_dir: PathBuf,
    /// A specific `nats-server`; else `PATH`, else the venv (installed on first run).
    pub binary: Option<PathBuf>,
    /// Client port on 127.0.0.1; when `None`, the server picks a free one itself.
    pub port: Option<u16>,
    /// Operator mode (`ramen up`): every client needs credentials. `None` runs the server
    /// open to anyone on loopback, as before.
    pub auth: Option<ServerAuth>,
}

/// What the server needs for operator mode ([`crate::auth::write_bundle`] writes both).
#[derive(Clone, Debug)]
pub struct ServerAuth {
    /// The operator configuration (`server-auth.conf`), passed with `-c`.
    pub config_file: PathBuf,
    /// The ramen account's public key: a store from before authentication moves to it.
    pub account: String,
}

/// Owns the child and the named task (`nats-supervisor`) that restarts it.
pub struct NatsSupervisor {
    port: u16,
    binary: PathBuf,
    state: Arc<State>,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    pid: AtomicU32,
    restarts: AtomicU64,
}

const STOP_DEADLINE: Duration = Duration::from_secs(10);
const READY_DEADLINE: Duration = Duration::from_secs(20);

impl NatsSupervisor {
    /// Finds (or installs) the binary, starts the server and waits until it accepts
    /// connections.
    pub async fn start(config: SupervisorConfig) -> Result<NatsSupervisor> {
        let binary = binary::locate(&config.data_dir, config.binary.as_deref()).await?;
        if let Some(port) = config.port
            // Otherwise the child would fail to bind while clients talk to the squatter.
            && tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
        {
            return Err(BusError::NatsServer(format!(
                "port {port} is already in use (a nats-server left from an earlier run?)"
            )));
        }
        let store_dir = config.data_dir.join("nats");
        if let Some(auth) = &config.auth {
            store::adopt_global_account(&store_dir, &auth.account)?;
        }
        let config_file = config.auth.as_ref().map(|auth| auth.config_file.clone());
        let mut launch =
            Launch { binary: binary.clone(), port: config.port, store_dir, config_file };
        std::fs::create_dir_all(launch.ports_dir()).map_err(|err| {
            BusError::io(format!("creating {}", launch.ports_dir().display()), err)
        })?;
        tracing::info!(binary = %binary.display(), port = ?config.port, "starting nats-server");
        let mut running = launch.spawn()?;
        let port = match wait_ready(&launch, &mut running).await {
            Ok(port) => port,
            Err(err) => {
                running.terminate(STOP_DEADLINE).await;
                return Err(err);
            }
        };
        launch.port = Some(port);
        let state = Arc::new(State::default());
        state.pid.store(running.pid().unwrap_or(0), Ordering::SeqCst);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(supervise(launch, running, state.clone(), cancel.clone()));
        Ok(NatsSupervisor { port, binary, state, cancel, task: Some(task) })
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn binary(&self) -> &std::path::Path {
        &self.binary
    }

    /// The running child's pid (`None` between a crash and its restart).
    pub fn pid(&self) -> Option<u32> {
        Some(self.state.pid.load(Ordering::SeqCst)).filter(|pid| *pid != 0)
    }

    /// How many times the child was restarted after dying.
    pub fn restarts(&self) -> u64 {
        self.state.restarts.load(Ordering::SeqCst)
    }

    /// SIGTERM to the child, SIGKILL after 10 s; returns when it is gone.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for NatsSupervisor {
    fn drop(&mut self) {
        // Without `shutdown`, the task still stops the child (or the runtime drops it, and
        // `kill_on_drop` does).
        self.cancel.cancel();
    }
}

/// The supervision loop: the task named `nats-supervisor`, owned by [`NatsSupervisor`].
async fn supervise(launch: Launch, first: Running, state: Arc<State>, cancel: CancellationToken) {
    let mut running = Some(first);
    let mut failures = 0u32;
    loop {
        if let Some(mut child) = running.take() {
            let started = tokio::time::Instant::now();
            tokio::select! {
                status = child.wait() => {
                    tracing::warn!(task = "nats-supervisor", ?status, "nats-server exited; restarting");
                }
                _ = cancel.cancelled() => {
                    child.terminate(STOP_DEADLINE).await;
                    state.pid.store(0, Ordering::SeqCst);
                    return;
                }
            }
            state.pid.store(0, Ordering::SeqCst);
            if started.elapsed() > Duration::from_secs(30) {
                failures = 0;
            }
        }
        let delay = Duration::from_millis(200u64 << failures.min(5)).min(Duration::from_secs(5));
        failures += 1;
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.cancelled() => return,
        }
        match launch.spawn() {
            Ok(child) => {
                state.pid.store(child.pid().unwrap_or(0), Ordering::SeqCst);
                state.restarts.fetch_add(1, Ordering::SeqCst);
                running = Some(child);
            }
            Err(err) => tracing::error!(task = "nats-supervisor", error = %err, "restart failed"),
        }
    }
}

/// Waits until the server accepts connections; returns its client port (the configured one,
/// or the one it reported in its ports file).
async fn wait_ready(launch: &Launch, running: &mut Running) -> Result<u16> {
    let started = tokio::time::Instant::now();
    let pid = running.pid().unwrap_or(0);
    let shown = launch.port.map_or_else(|| "the port it picks".to_owned(), |p| format!("port {p}"));
    loop {
        let port = launch.port.or_else(|| launch.reported_port(pid));
        if let Some(port) = port
            && tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
        {
            return Ok(port);
        }
        if let Ok(Some(status)) = running.child.try_wait() {
            return Err(BusError::NatsServer(format!(
                "exited with {status} before accepting connections on {shown} (see its log)"
            )));
        }
        if started.elapsed() > READY_DEADLINE {
            return Err(BusError::NatsServer(format!("not listening on {shown} after 20 s")));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
