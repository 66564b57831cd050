//! A worker slot: what it should run (desired), what it is doing (status), and the named task
//! that supervises its process.

use std::sync::Arc;
use std::time::Duration;

use ramen_lifecycle::TaskCenter;
use tokio::sync::watch;
use tokio::time::Instant;

use super::layout::WorkerDir;
use super::placement::LocalPlacement;
use crate::model::{TrackKind, WorkerPhase};
use crate::provider::{ConfigTemplate, NotReadyWorker, WorkerEvents, WorkerView};

/// A worker that exits this many times in one generation is failing, not starting.
const CRASH_LOOP_EXITS: u32 = 3;

#[derive(Clone, Debug)]
pub(crate) enum Desired {
    /// Run `template`; a new `generation` means restart in place.
    Run { generation: u64, template: Arc<ConfigTemplate> },
    /// Drain and stop for good.
    Stop,
}

#[derive(Clone, Debug)]
pub(crate) struct WorkerStatus {
    /// Generation of the process this describes.
    pub generation: u64,
    pub phase: WorkerPhase,
    pub reason: String,
    pub pid: Option<u32>,
    pub mcp: String,
    /// The node's abstract Unix socket (`@name`), if it serves one.
    pub mcp_local: String,
    pub admin: String,
    pub grpc: String,
    pub loaded_commit: String,
    pub restarts: u32,
    pub started_at_ms: i64,
    pub exit_code: Option<i32>,
    pub log_tail: Vec<String>,
    pub exits_this_generation: u32,
    pub limits: String,
    /// The supervisor finished (stopped for good, or the control plane is shutting down).
    pub stopped: bool,
}

/// What the supervision task of one worker needs.
pub(crate) struct WorkerCtx {
    pub placement: Arc<LocalPlacement>,
    pub id: String,
    pub track: TrackKind,
    pub dir: WorkerDir,
    pub events: WorkerEvents,
}

pub(crate) struct WorkerHandle {
    pub id: String,
    pub track: TrackKind,
    pub index: u32,
    log: std::path::PathBuf,
    desired: watch::Sender<Desired>,
    status: watch::Receiver<WorkerStatus>,
}

impl WorkerHandle {
    /// Creates the slot and spawns its supervision task (`zone-worker:<group>/<zone>/<id>`).
    pub fn start(
        ctx: WorkerCtx,
        index: u32,
        template: Arc<ConfigTemplate>,
        tasks: &TaskCenter,
    ) -> Self {
        let initial = WorkerStatus {
            generation: 1,
            phase: WorkerPhase::Starting,
            reason: "scheduled".into(),
            pid: None,
            mcp: String::new(),
            mcp_local: String::new(),
            admin: String::new(),
            grpc: String::new(),
            loaded_commit: String::new(),
            restarts: 0,
            started_at_ms: 0,
            exit_code: None,
            log_tail: Vec::new(),
            exits_this_generation: 0,
            limits: String::new(),
            stopped: false,
        };
        let (desired_tx, desired_rx) = watch::channel(Desired::Run { generation: 1, template });
        let (status_tx, status_rx) = watch::channel(initial);
        let (id, track, log) = (ctx.id.clone(), ctx.track, ctx.dir.log());
        let name = format!("zone-worker:{}/{}/{}", ctx.placement.group, ctx.placement.zone, ctx.id);
        tasks.spawn(name, move |token| super::supervisor::run(ctx, desired_rx, status_tx, token));
        Self { id, track, index, log, desired: desired_tx, status: status_rx }
    }

    pub fn status(&self) -> WorkerStatus {
        self.status.borrow().clone()
    }

    /// Restarts it in place on `template`; returns the new generation to wait for.
    pub fn run(&self, template: Arc<ConfigTemplate>) -> u64 {
        let mut next = 0;
        self.desired.send_modify(|desired| {
            let previous = match desired {
                Desired::Run { generation, .. } => *generation,
                Desired::Stop => 0,
            };
            next = previous.max(self.status.borrow().generation) + 1;
            *desired = Desired::Run { generation: next, template };
        });
        next
    }

    pub fn stop(&self) {
        self.desired.send_replace(Desired::Stop);
    }

    pub fn generation(&self) -> u64 {
        match &*self.desired.borrow() {
            Desired::Run { generation, .. } => *generation,
            Desired::Stop => 0,
        }
    }

    /// Waits until the process of `generation` is ready. Gives up at `deadline`, or early when
    /// it keeps exiting, with the reason: exit code, readiness answer, last log lines.
    pub async fn wait_ready(
        &self,
        generation: u64,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), NotReadyWorker> {
        let mut status = self.status.clone();
        let outcome = tokio::time::timeout_at(
            deadline,
            status.wait_for(|s| {
                s.generation == generation
                    && (s.phase == WorkerPhase::Ready
                        || s.exits_this_generation >= CRASH_LOOP_EXITS
                        || s.stopped)
            }),
        )
        .await;
        let now = self.status();
        match outcome {
            Ok(Ok(s)) if s.phase == WorkerPhase::Ready => Ok(()),
            Ok(_) if now.stopped => {
                Err(self.not_ready(&now, "stopped before it became ready".into()))
            }
            Ok(_) => Err(self.not_ready(
                &now,
                format!("keeps exiting ({} exits): {}", now.exits_this_generation, now.reason),
            )),
            Err(_) => Err(self.not_ready(&now, not_ready_reason(&now, generation, timeout))),
        }
    }

    fn not_ready(&self, status: &WorkerStatus, reason: String) -> NotReadyWorker {
        // Read now: the process may have logged since the status was taken.
        let last_log_lines = super::logs::tail(&self.log, super::logs::TAIL_LINES);
        NotReadyWorker { id: self.id.clone(), reason, exit_code: status.exit_code, last_log_lines }
    }

    /// Waits for the supervisor to finish; past `timeout` the caller moves on (the process was
    /// killed by then or will be at shutdown).
    pub async fn wait_stopped(&self, timeout: Duration) {
        let mut status = self.status.clone();
        let _ = tokio::time::timeout(timeout, status.wait_for(|s| s.stopped)).await;
    }

    pub fn view(&self) -> WorkerView {
        self.status().view(&self.id, self.track)
    }
}

impl WorkerStatus {
    pub fn view(&self, id: &str, track: TrackKind) -> WorkerView {
        WorkerView {
            id: id.to_owned(),
            track,
            state: self.phase,
            reason: self.reason.clone(),
            mcp_address: self.mcp.clone(),
            mcp_local: self.mcp_local.clone(),
            admin_address: self.admin.clone(),
            grpc_address: self.grpc.clone(),
            loaded_commit: self.loaded_commit.clone(),
            restarts: self.restarts,
            started_at_ms: self.started_at_ms,
            pid: self.pid,
            exit_code: self.exit_code,
            last_log_lines: self.log_tail.clone(),
            limits: self.limits.clone(),
        }
    }
}

fn not_ready_reason(status: &WorkerStatus, generation: u64, timeout: Duration) -> String {
    let waited = format!("{}s", timeout.as_secs_f64().round() as u64);
    if status.generation != generation {
        return format!("not started within {waited}");
    }
    format!("not ready after {waited}: {}", status.reason)
}
