//! The supervision task of one worker: starts its process, probes readiness, restarts it in
//! place when asked, replaces it when it dies (backing off while it keeps dying), drains it
//! when stopped. Every change of state is reported as a [`WorkerEvent`].

use std::process::ExitStatus;
use std::time::Duration;

use ramen_node_contract::NodePorts;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod report;

use super::orphans;
use super::probe::{self, Probe};
use super::spawn::{self, Proc};
use super::worker::{Desired, WorkerCtx, WorkerStatus};
use crate::model::WorkerPhase;

/// Every this many probes of a ready worker, its loaded commit is read again (a deploy's
/// reload changes it without a restart).
const COMMIT_REFRESH_PROBES: u32 = 25;

enum Ended {
    Exited(std::io::Result<ExitStatus>),
    /// Asked to restart in place or to stop.
    Changed,
    /// The control plane is shutting down: stop the process, keep the worker on record.
    Cancelled,
}

struct Supervisor {
    ctx: WorkerCtx,
    desired: watch::Receiver<Desired>,
    status: watch::Sender<WorkerStatus>,
    token: CancellationToken,
    /// Consecutive failures, for the back-off.
    failures: u32,
    starts: u32,
}

pub(crate) async fn run(
    ctx: WorkerCtx,
    desired: watch::Receiver<Desired>,
    status: watch::Sender<WorkerStatus>,
    token: CancellationToken,
) {
    let mut supervisor = Supervisor { ctx, desired, status, token, failures: 0, starts: 0 };
    let removed = supervisor.supervise().await;
    supervisor.finish(removed);
}

impl Supervisor {
    /// Returns true when the worker was stopped for good, false on shutdown.
    async fn supervise(&mut self) -> bool {
        loop {
            if self.token.is_cancelled() {
                return false;
            }
            if self.desired.has_changed().is_err() {
                return true; // the slot was dropped: nobody wants this worker any more
            }
            let Desired::Run { generation, template } = self.desired.borrow_and_update().clone()
            else {
                return true;
            };
            let mut proc = match spawn::spawn(&self.ctx, &template).await {
                Ok(proc) => proc,
                Err(reason) => {
                    self.exited(generation, None, reason);
                    if !self.pause().await {
                        return false;
                    }
                    continue;
                }
            };
            self.started(generation, &proc);
            match self.watch(&mut proc).await {
                Ended::Exited(status) => {
                    self.process_gone(&proc);
                    let (code, reason) = report::describe_exit(status);
                    self.exited(generation, code, reason);
                    if !self.pause().await {
                        return false;
                    }
                }
                Ended::Changed => self.stop(&mut proc).await,
                Ended::Cancelled => {
                    self.stop(&mut proc).await;
                    return false;
                }
            }
        }
    }

    async fn watch(&mut self, proc: &mut Proc) -> Ended {
        let mut tick = tokio::time::interval(self.ctx.placement.settings.probe_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut probes = 0u32;
        loop {
            tokio::select! {
                _ = self.token.cancelled() => return Ended::Cancelled,
                // A dropped handle reads as a change; the loop then sees `Stop` or shuts down.
                _ = self.desired.changed() => return Ended::Changed,
                status = proc.child.wait() => return Ended::Exited(status),
                _ = tick.tick() => {
                    probes += 1;
                    self.probe(proc, probes).await;
                }
            }
        }
    }

    async fn probe(&mut self, proc: &mut Proc, probes: u32) {
        let ports = match &proc.ports {
            Some(ports) => ports.clone(),
            None => match NodePorts::read(&self.ctx.dir.ports_file(), proc.pid) {
                Some(ports) => {
                    self.listening(&ports);
                    proc.ports = Some(ports.clone());
                    ports
                }
                None => return, // still starting: it has not bound its ports yet
            },
        };
        let was_ready = self.status.borrow().phase == WorkerPhase::Ready;
        match probe::readiness(ports.admin).await {
            Probe::Ready if !was_ready => {
                self.failures = 0;
                let commit = self.loaded_commit(ports.admin).await.unwrap_or_default();
                self.update(|s| {
                    s.phase = WorkerPhase::Ready;
                    s.reason.clear();
                    s.loaded_commit = commit;
                });
                self.catch_up_policy(proc).await;
            }
            Probe::Ready if probes.is_multiple_of(COMMIT_REFRESH_PROBES) => {
                if let Some(commit) = self.loaded_commit(ports.admin).await {
                    self.update(|s| s.loaded_commit = commit);
                }
            }
            Probe::Ready => {}
            Probe::NotReady(reason) | Probe::Down(reason) => {
                let ever_ready = !self.status.borrow().loaded_commit.is_empty();
                let phase = match () {
                    _ if reason.contains("draining") => WorkerPhase::Draining,
                    _ if ever_ready => WorkerPhase::NotReady,
                    _ => WorkerPhase::Starting,
                };
                self.update(|s| {
                    s.phase = phase;
                    s.reason = reason;
                });
            }
        }
    }

    /// The commit the worker has loaded, asked with a ticket for its placement.
    async fn loaded_commit(&self, admin: std::net::SocketAddr) -> Option<String> {
        let record = self.ctx.placement.record();
        let ticket = self.ctx.placement.settings.nodes.ticket(&record.group, &record.zone);
        probe::loaded_commit(admin, &ticket).await
    }

    /// A worker started before the latest policy push missed it: give it the current one.
    async fn catch_up_policy(&self, proc: &mut Proc) {
        let record = self.ctx.placement.record();
        if record.policy_version <= proc.policy_version {
            return;
        }
        let policy = crate::provider::policy::node_policy(
            &record,
            &self.ctx.placement.settings.trusted_proxies,
        );
        let Some(ports) = &proc.ports else { return };
        let nodes = &*self.ctx.placement.settings.nodes.client;
        let grpc = ports.grpc.to_string();
        match crate::provider::policy::push_one(nodes, &record, &grpc, policy).await {
            Ok(()) => proc.policy_version = record.policy_version,
            Err(err) => {
                tracing::warn!(worker = %self.ctx.id, %err, "pushing the current policy failed")
            }
        }
    }

    /// Drains the process (SIGTERM), killing its group past the drain deadline.
    async fn stop(&mut self, proc: &mut Proc) {
        self.update(|s| {
            s.phase = WorkerPhase::Draining;
            s.reason = "stopping".into();
        });
        orphans::terminate(proc.pid);
        let deadline = self.ctx.placement.stop_deadline();
        if tokio::time::timeout(deadline, proc.child.wait()).await.is_err() {
            tracing::warn!(worker = %self.ctx.id, "did not stop within {deadline:?}; killing it");
            orphans::kill_group(proc.pid);
            let _ = proc.child.wait().await;
        }
        self.process_gone(proc);
    }

    /// The node is gone: take its runtime with it if it was left behind, forget the pid.
    fn process_gone(&self, proc: &Proc) {
        orphans::kill_group(proc.pid);
        orphans::clear_pid(&self.ctx.dir);
    }

    /// Waits before the next start, longer after each failure; false when shutting down.
    async fn pause(&mut self) -> bool {
        let max = self.ctx.placement.settings.max_backoff;
        let delay = (Duration::from_millis(250)
            * 2u32.saturating_pow(self.failures.saturating_sub(1)))
        .min(max);
        tokio::select! {
            _ = self.token.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
            _ = self.desired.changed() => true,
        }
    }
}
