use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command as Process};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::client::{Calls, INTERNAL, Incoming, RpcError};
use super::{Command, Load, Report, RuntimeError, RuntimeSpec, RuntimeState, frame};

const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A runtime that stayed up this long starts the next backoff from the beginning.
const STABLE_AFTER: Duration = Duration::from_secs(30);
const STOP_GRACE: Duration = Duration::from_secs(5);
const LOG_TAIL: usize = 40;

type Reply = oneshot::Sender<Result<Arc<Report>, RuntimeError>>;

pub(super) struct Supervisor {
    spec: RuntimeSpec,
    calls: Arc<Calls>,
    state: watch::Sender<RuntimeState>,
    restarts: Counter,
    log_tail: Arc<Mutex<VecDeque<String>>>,
}

/// A running child and how it ends.
struct Running {
    child: Child,
    ready: oneshot::Receiver<Result<Report, String>>,
}

impl Supervisor {
    pub fn new(
        spec: RuntimeSpec,
        calls: Arc<Calls>,
        state: watch::Sender<RuntimeState>,
        restarts: Counter,
    ) -> Self {
        Self { spec, calls, state, restarts, log_tail: Default::default() }
    }

    pub async fn run(self, mut commands: mpsc::Receiver<Command>, stop: CancellationToken) {
        let mut load: Option<Load> = None;
        let mut waiting: Vec<Reply> = Vec::new();
        let mut backoff = BACKOFF_START;
        loop {
            let Some(current) = load.clone() else {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    command = commands.recv() => match command {
                        Some(Command::Load(next, reply)) => { load = Some(next); waiting.push(reply); continue }
                        None => return,
                    },
                }
            };
            self.state.send_replace(RuntimeState::Starting);
            let started = tokio::time::Instant::now();
            let outcome = self.run_once(&current, &mut waiting, &mut commands, &stop).await;
            match outcome {
                Ended::Stop => return,
                Ended::Reload(next, reply) => {
                    load = Some(next);
                    waiting.push(reply);
                    backoff = BACKOFF_START;
                    continue;
                }
                Ended::Failed(reason) => {
                    self.calls.fail_all(RpcError::new(
                        INTERNAL,
                        "the Python runtime is restarting; retry the call",
                    ));
                    tracing::warn!(%reason, retry_in = ?backoff, "python runtime failed");
                    self.state.send_replace(RuntimeState::Failed(reason.clone()));
                    for reply in waiting.drain(..) {
                        let _ = reply.send(Err(RuntimeError::Start(reason.clone())));
                    }
                    self.restarts.inc();
                }
            }
            if started.elapsed() > STABLE_AFTER {
                backoff = BACKOFF_START;
            }
            // Wait out the backoff, but a new load or a stop cuts it short.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
                command = commands.recv() => match command {
                    Some(Command::Load(next, reply)) => { load = Some(next); waiting.push(reply); }
                    None => return,
                },
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Starts one child on `load` and supervises it until it dies, a reload replaces it, or
    /// the node stops.
    async fn run_once(
        &self,
        load: &Load,
        waiting: &mut Vec<Reply>,
        commands: &mut mpsc::Receiver<Command>,
        stop: &CancellationToken,
    ) -> Ended {
        let Running { mut child, ready } = match self.spawn(load) {
            Ok(running) => running,
            Err(err) => return Ended::Failed(err),
        };
        let ready = tokio::select! {
            _ = stop.cancelled() => { self.stop_child(&mut child).await; return Ended::Stop }
            status = child.wait() => return Ended::Failed(self.exit_reason("exited before it was ready", status)),
            _ = tokio::time::sleep(self.spec.ready_timeout) => {
                self.stop_child(&mut child).await;
                return Ended::Failed(format!("not ready after {:?} (importing the packages took too long){}", self.spec.ready_timeout, self.tail_suffix()));
            }
            ready = ready => match ready {
                Ok(ready) => ready,
                // The reader ended without a ready frame: the child closed its output.
                Err(_) => {
                    let status = match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                        Ok(status) => status,
                        Err(_) => { self.stop_child(&mut child).await; Err(std::io::Error::other("still running")) }
                    };
                    return Ended::Failed(self.exit_reason("closed its output before it was ready", status));
                }
            },
        };
        match ready {
            Ok(report) => {
                let report = Arc::new(report);
                self.state.send_replace(RuntimeState::Ready(report.clone()));
                for reply in waiting.drain(..) {
                    let _ = reply.send(Ok(report.clone()));
                }
            }
            Err(reason) => {
                self.stop_child(&mut child).await;
                return Ended::Failed(reason);
            }
        }
        tokio::select! {
            _ = stop.cancelled() => { self.stop_child(&mut child).await; Ended::Stop }
            status = child.wait() => {
                // Clients get a short, retryable error; the exit status and log tail are for
                // the node's log and the worker report.
                self.calls.fail_all(RpcError::new(INTERNAL, "the Python runtime exited; the call did not complete, retry it"));
                Ended::Failed(self.exit_reason("exited", status))
            }
            command = commands.recv() => {
                self.stop_child(&mut child).await;
                match command {
                    Some(Command::Load(next, reply)) => Ended::Reload(next, reply),
                    None => Ended::Stop,
                }
            }
        }
    }

    fn spawn(&self, load: &Load) -> Result<Running, String> {
        let group_code = &self.spec.group_code;
        let mut command = Process::new(&self.spec.python);
        group_code.environment(&mut command);
        command
            .arg("-m")
            .arg("ramen_runtime")
            .arg("--root")
            .arg(&load.root)
            .env("PYTHONPATH", &self.spec.runtime_dir)
            .env("PYTHONUNBUFFERED", "1")
            .envs(load.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&load.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if !self.spec.namespace {
            command.arg("--no-namespace");
        }
        let serving = [self.spec.runtime_dir.as_path(), load.root.as_path()];
        group_code.confine(&mut command, group_code.runtime(&self.spec.python, &serving))?;
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.spec.python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let stderr = child.stderr.take().ok_or("no stderr pipe")?;

        let (writer, frames) = mpsc::unbounded_channel();
        self.calls.attach(writer);
        tokio::spawn(write_frames(stdin, frames, self.calls.clone()));
        let (ready_tx, ready) = oneshot::channel();
        tokio::spawn(read_frames(stdout, self.calls.clone(), ready_tx));
        self.log_tail.lock().clear();
        tokio::spawn(forward_stderr(stderr, self.log_tail.clone()));
        Ok(Running { child, ready })
    }

    /// Asks the runtime to exit, then kills its process group after a grace period.
    async fn stop_child(&self, child: &mut Child) {
        self.calls.send_raw(br#"{"op":"shutdown"}"#);
        if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.kill().await;
        }
        self.calls
            .fail_all(RpcError::new(INTERNAL, "the Python runtime was restarted; retry the call"));
    }

    fn exit_reason(&self, what: &str, status: std::io::Result<std::process::ExitStatus>) -> String {
        let status = match status {
            Ok(status) => status.to_string(),
            Err(err) => format!("unknown status ({err})"),
        };
        format!("{what} ({status}){}", self.tail_suffix())
    }

    fn tail_suffix(&self) -> String {
        let tail = self.log_tail.lock();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; last output:\n{}", tail.iter().cloned().collect::<Vec<_>>().join("\n"))
        }
    }
}

enum Ended {
    Stop,
    Reload(Load, Reply),
    Failed(String),
}

/// Writes queued frames, coalescing whatever is queued into one flush.
///
/// With other calls in flight, the writer first lets the node's ready tasks run
/// (`yield_now`): the request that woke it was usually one of several whose connections were
/// ready at once, and each would otherwise be written alone. Woken into tokio's LIFO slot, the
/// writer ran straight after the first request and wrote one frame per `write` even at
/// concurrency 16 (`strace -c`: 7,110 `write`s for 7,132 calls). A lone call is written at
/// once: yielding would cost it a poll of the driver and gain nothing.
async fn write_frames(
    stdin: ChildStdin,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    calls: Arc<Calls>,
) {
    let mut out = BufWriter::with_capacity(64 * 1024, stdin);
    while let Some(frame) = frames.recv().await {
        if calls.in_flight() > 1 {
            tokio::task::yield_now().await;
        }
        if out.write_all(&frame).await.is_err() {
            return;
        }
        while let Ok(more) = frames.try_recv() {
            if out.write_all(&more).await.is_err() {
                return;
            }
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

async fn read_frames(
    stdout: ChildStdout,
    calls: Arc<Calls>,
    ready: oneshot::Sender<Result<Report, String>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let mut ready = Some(ready);
    loop {
        if let Err(err) = frame::read(&mut reader, &mut buf).await {
            if !matches!(err, frame::FrameError::Closed) {
                tracing::warn!(%err, "reading the runtime's output failed");
            }
            return;
        }
        // UTF-8 checked once, not string by string and raw value by raw value (see
        // `jsonrpc::parse`).
        let parsed = std::str::from_utf8(&buf)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<Incoming>(text).map_err(|e| e.to_string()));
        let incoming: Incoming = match parsed {
            Ok(incoming) => incoming,
            Err(err) => {
                tracing::warn!(%err, "runtime sent a frame that is not a protocol message");
                continue;
            }
        };
        if incoming.op.as_deref() == Some("ready") {
            let report = incoming
                .report
                .ok_or_else(|| "ready frame without a report".to_owned())
                .and_then(|raw| {
                    serde_json::from_str::<Report>(raw.get())
                        .map_err(|e| format!("unreadable report: {e}"))
                });
            if let Some(ready) = ready.take() {
                let _ = ready.send(report);
            }
            continue;
        }
        calls.dispatch(incoming);
    }
}

/// The runtime's stderr (its logs, and anything packages print) goes to the node's log,
/// and the last lines are kept to explain a crash.
async fn forward_stderr(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "ramen::runtime", "{line}");
        let mut tail = tail.lock();
        if tail.len() == LOG_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}
