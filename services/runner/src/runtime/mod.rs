//! The Python runtime as a supervised child process: started on a snapshot, restarted with
//! backoff when it dies (in-flight calls fail with a JSON-RPC error), replaced on reload.

mod client;
mod frame;
mod process;
mod report;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use client::{CANCELLED, CallEvent, INTERNAL, RpcError};
pub use report::{LoadError, PackageReport, Report, ServerKind};

use client::Calls;

/// How to start the runtime. The snapshot root comes with each [`Runtime::load`].
#[derive(Clone, Debug)]
pub struct RuntimeSpec {
    /// The interpreter of the node's virtualenv.
    pub python: PathBuf,
    /// Directory holding the `ramen_runtime` package (put on `PYTHONPATH`).
    pub runtime_dir: PathBuf,
    pub namespace: bool,
    /// How long importing the packages may take before the start counts as failed.
    pub ready_timeout: Duration,
    /// Its environment and confinement.
    pub group_code: crate::confine::GroupCode,
}

#[derive(Clone, Debug)]
pub enum RuntimeState {
    /// Nothing loaded yet.
    Idle,
    Starting,
    Ready(Arc<Report>),
    /// The last start or run failed; the supervisor is retrying with backoff.
    Failed(String),
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("the Python runtime did not start: {0}")]
    Start(String),
    #[error("the runtime supervisor has stopped")]
    Stopped,
}

/// A snapshot to load and the environment the group's code sees (its secrets, verbosity).
#[derive(Clone, Debug, Default)]
pub struct Load {
    pub root: PathBuf,
    pub env: Vec<(String, String)>,
}

enum Command {
    Load(Load, oneshot::Sender<Result<Arc<Report>, RuntimeError>>),
}

/// Handle to the supervised runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    calls: Arc<Calls>,
    state: watch::Receiver<RuntimeState>,
    commands: mpsc::Sender<Command>,
}

impl Runtime {
    /// Starts the supervisor (idle until the first [`load`](Self::load)). It stops, taking
    /// the child down with it, when `stop` is cancelled.
    pub fn start(spec: RuntimeSpec, restarts: Counter, stop: CancellationToken) -> Self {
        let calls = Calls::new();
        let (state_tx, state) = watch::channel(RuntimeState::Idle);
        let (commands, command_rx) = mpsc::channel(8);
        let supervisor = process::Supervisor::new(spec, calls.clone(), state_tx, restarts);
        tokio::spawn(supervisor.run(command_rx, stop));
        Self { calls, state, commands }
    }

    /// (Re)starts the runtime on `load.root` and waits for its package report.
    pub async fn load(&self, load: Load) -> Result<Arc<Report>, RuntimeError> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Command::Load(load, reply)).await.map_err(|_| RuntimeError::Stopped)?;
        answer.await.map_err(|_| RuntimeError::Stopped)?
    }

    pub fn state(&self) -> RuntimeState {
        self.state.borrow().clone()
    }

    pub fn report(&self) -> Option<Arc<Report>> {
        match &*self.state.borrow() {
            RuntimeState::Ready(report) => Some(report.clone()),
            _ => None,
        }
    }

    pub fn is_ready(&self) -> bool {
        matches!(*self.state.borrow(), RuntimeState::Ready(_))
    }

    /// Changes of state (a new report after reload or restart).
    pub fn watch(&self) -> watch::Receiver<RuntimeState> {
        self.state.clone()
    }

    /// Sends the request built by `build(id)`.
    pub fn call(
        &self,
        build: impl FnOnce(u64) -> Vec<u8>,
    ) -> Result<(u64, mpsc::Receiver<CallEvent>), RpcError> {
        self.calls.start(build)
    }

    pub fn cancel(&self, id: u64) {
        self.calls.cancel(id);
    }

    /// Cancels every call in flight (interrupt drain).
    pub fn cancel_all(&self) {
        for id in self.calls.ids() {
            self.calls.cancel(id);
        }
    }

    /// Drops interest in a call (its caller went away) and tells the runtime to stop it.
    pub fn abandon(&self, id: u64) {
        self.calls.cancel(id);
        self.calls.forget(id);
    }

    pub fn respond(&self, rid: u64, outcome: Result<&RawValue, &RpcError>) {
        self.calls.respond(rid, outcome);
    }

    pub fn in_flight(&self) -> usize {
        self.calls.in_flight()
    }

    /// Resolves when the runtime said what it lists may have changed (a tool announced a
    /// list change, a stdio program restarted); several hints in a row resolve once.
    pub async fn relist_wanted(&self) {
        self.calls.relist.notified().await;
    }

    /// Asks the running runtime to list every package again (`{"op":"list"}`).
    pub async fn list(&self) -> Result<Report, RpcError> {
        let (_, mut events) =
            self.calls.start(|id| format!(r#"{{"id":{id},"op":"list"}}"#).into_bytes())?;
        loop {
            match events.recv().await {
                Some(CallEvent::Done(Ok(report))) => {
                    return serde_json::from_str(report.get()).map_err(|e| {
                        RpcError::new(INTERNAL, format!("the runtime's report is malformed: {e}"))
                    });
                }
                Some(CallEvent::Done(Err(error))) => return Err(error),
                Some(_) => {}
                None => return Err(RpcError::new(INTERNAL, "the runtime went away while listing")),
            }
        }
    }
}
