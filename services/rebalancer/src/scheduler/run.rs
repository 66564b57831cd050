//! Scheduled runs (task `rebalancer-scheduler`): when this replica leads and the settings turn
//! the scheduler on, rebalance every cell that has load to weigh by, once per interval. Each
//! run is audited as `rebalancer.scheduled_run` by actor `scheduler`, and so is each
//! rebalance it starts.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ramen_lifecycle::TaskCenter;
use tokio_util::sync::CancellationToken;

use super::{LAST_RUN_KEY, LastRun, Scheduler};
use crate::model::{LoadState, Provider, now_ms};
use crate::ports::AuditRecord;

const TICK: Duration = Duration::from_millis(500);
/// How often the leader looks for pending rebalances of a replica that died.
const ADOPT_EVERY: Duration = Duration::from_secs(60);
pub const RUN_ACTION: &str = "rebalancer.scheduled_run";

impl Scheduler {
    pub fn spawn_runs(self: &Arc<Self>, tasks: &TaskCenter) {
        let this = self.clone();
        tasks.spawn("rebalancer-scheduler", move |stop| async move { this.tick_loop(stop).await });
    }

    async fn tick_loop(&self, stop: CancellationToken) {
        let mut adopted_at = now_ms();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(TICK) => {}
            }
            if !self.is_leader() {
                continue;
            }
            let now = now_ms();
            if now - adopted_at >= ADOPT_EVERY.as_millis() as i64 {
                adopted_at = now;
                if let Err(err) = self.rebalancer.adopt_stale().await {
                    tracing::warn!(%err, "cannot look for pending rebalances");
                }
            }
            let settings = self.settings();
            if !settings.enabled {
                continue;
            }
            let due = match self.last_run().await {
                Some(last) => now >= last.at_ms + settings.interval.as_millis() as i64,
                None => true,
            };
            if due {
                self.run().await;
            }
        }
    }

    /// One run over every cell with live load; returns what it recorded.
    pub async fn run(&self) -> LastRun {
        let rebalancer = &self.rebalancer;
        let (snapshot, catalog) = (rebalancer.cells.snapshot(), rebalancer.catalog.get());
        let caller = crate::model::scheduler();
        let mut balanced = HashSet::new();
        let (mut started, mut refused) = (0u32, Vec::new());
        for ((group, zone), cell) in &snapshot.cells {
            let active = catalog.placement(group, zone).is_some_and(|p| p.active);
            let Some(info) = catalog.zones.get(zone) else { continue };
            if cell.state == LoadState::Down || !active {
                continue;
            }
            // A cloud balancer weighs all of a group's zones at once: one action per group.
            let key = match info.provider {
                Provider::Local => format!("{group}/{zone}"),
                cloud => format!("{group}/{}", cloud.name()),
            };
            if !balanced.insert(key) {
                continue;
            }
            match rebalancer.rebalance(&caller, group, zone).await {
                Ok(_) => started += 1,
                Err(err) => refused.push(format!("{group}/{zone}: {err}")),
            }
        }
        let run = LastRun { at_ms: now_ms(), actions: started, leader: rebalancer.replica.clone() };
        self.audit_run(&run, &refused, snapshot.cells.len()).await;
        match serde_json::to_vec(&run) {
            Ok(json) => {
                if let Err(err) = self.state.put(LAST_RUN_KEY, Bytes::from(json)).await {
                    tracing::warn!(%err, "scheduled run not recorded in KV");
                }
            }
            Err(err) => tracing::warn!(%err, "scheduled run not encodable"),
        }
        run
    }

    async fn audit_run(&self, run: &LastRun, refused: &[String], cells: usize) {
        let mut details = BTreeMap::from([
            ("actions".to_owned(), run.actions.to_string()),
            ("cells".to_owned(), cells.to_string()),
            ("leader".to_owned(), run.leader.clone()),
        ]);
        if !refused.is_empty() {
            details.insert("refused".to_owned(), refused.join("; "));
        }
        let caller = crate::model::scheduler();
        let entry = AuditRecord {
            id: format!("scheduled-run:{}:{}", run.leader, run.at_ms),
            actor: caller.actor,
            action: RUN_ACTION.to_owned(),
            group: String::new(),
            target: "scheduler".to_owned(),
            success: refused.is_empty(),
            request_id: String::new(),
            details,
        };
        self.rebalancer.append_audit(entry).await;
    }
}
