//! How the supervisor reports: status transitions of its worker, sent on as
//! [`WorkerEvent`]s when something a caller cares about changed.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::super::logs;
use super::super::spawn::Proc;
use super::super::worker::WorkerStatus;
use super::Supervisor;
use crate::model::WorkerPhase;
use crate::provider::WorkerEvent;

impl Supervisor {
    pub(super) fn started(&mut self, generation: u64, proc: &Proc) {
        let restarted = self.starts > 0;
        self.starts += 1;
        let limits = self.ctx.placement.settings.memory.describe(self.ctx.placement.record().size);
        self.update(|s| {
            if s.generation != generation {
                s.exits_this_generation = 0;
            }
            s.generation = generation;
            s.phase = WorkerPhase::Starting;
            s.reason = "process started".into();
            s.pid = Some(proc.pid);
            s.mcp.clear();
            s.mcp_local.clear();
            s.admin.clear();
            s.grpc.clear();
            s.loaded_commit.clear();
            s.restarts += u32::from(restarted);
            s.started_at_ms = proc.started_at_ms;
            s.exit_code = None;
            s.limits = limits;
        });
    }

    /// The node has bound its ports: from now on it can be probed and reached.
    pub(super) fn listening(&mut self, ports: &ramen_node_contract::NodePorts) {
        self.update(|s| {
            s.mcp = ports.mcp.to_string();
            s.mcp_local = ports.mcp_local.clone().unwrap_or_default();
            s.admin = ports.admin.to_string();
            s.grpc = ports.grpc.to_string();
            s.reason = "listening".into();
        });
    }

    pub(super) fn exited(&mut self, generation: u64, exit_code: Option<i32>, reason: String) {
        self.failures += 1;
        let log_tail = logs::tail(&self.ctx.dir.log(), logs::TAIL_LINES);
        tracing::warn!(worker = %self.ctx.id, group = %self.ctx.placement.group, zone = %self.ctx.placement.zone, %reason, "worker not running");
        self.update(|s| {
            if s.generation != generation {
                s.exits_this_generation = 0;
            }
            s.generation = generation;
            s.phase = WorkerPhase::Exited;
            s.reason = reason;
            s.exit_code = exit_code;
            s.exits_this_generation += 1;
            s.log_tail = log_tail;
            s.pid = None;
            s.mcp.clear();
            s.admin.clear();
            s.grpc.clear();
        });
    }

    pub(super) fn finish(&mut self, removed: bool) {
        self.update(|s| {
            s.phase = WorkerPhase::Exited;
            s.reason = if removed { "stopped".into() } else { "control plane stopped".into() };
            s.pid = None;
            s.stopped = true;
        });
        if removed {
            let placement = &self.ctx.placement;
            let _ = self.ctx.events.send(WorkerEvent::Removed {
                group: placement.group.clone(),
                zone: placement.zone.clone(),
                id: self.ctx.id.clone(),
                track: self.ctx.track,
            });
        }
    }

    /// Applies `change`; reports the worker when its state, reason or process changed.
    pub(super) fn update(&self, change: impl FnOnce(&mut WorkerStatus)) {
        let before = self.status.borrow().clone();
        self.status.send_modify(change);
        let after = self.status.borrow().clone();
        let changed = before.phase != after.phase
            || before.reason != after.reason
            || before.pid != after.pid
            || before.loaded_commit != after.loaded_commit;
        if changed && !after.stopped {
            let placement = &self.ctx.placement;
            let _ = self.ctx.events.send(WorkerEvent::Changed {
                group: placement.group.clone(),
                zone: placement.zone.clone(),
                worker: Box::new(after.view(&self.ctx.id, self.ctx.track)),
            });
        }
    }
}

pub(super) fn describe_exit(status: std::io::Result<ExitStatus>) -> (Option<i32>, String) {
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (Some(code), format!("exited with code {code}")),
            (None, Some(signal)) => {
                let name = nix::sys::signal::Signal::try_from(signal)
                    .map_or_else(|_| signal.to_string(), |s| s.to_string());
                (None, format!("killed by signal {signal} ({name})"))
            }
            (None, None) => (None, "exited".into()),
        },
        Err(err) => (None, format!("lost track of the process: {err}")),
    }
}
