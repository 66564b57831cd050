//! The local zone provider: each worker is a `ramen worker` child process (the runner node and
//! its Python runtime) in its own directory under `<data_dir>/zones/<zone>/<group>/`, on free
//! loopback ports. One supervision task per worker replaces it when it dies.
//!
//! Layout of a placement directory (the local stand-in for the namespace):
//! - `config/written.toml` — the last config written (snapshot, secrets; mode 0600)
//! - `config/<track>.toml` — what each track runs (adopted by its last successful restart)
//! - `workers/<worker-id>/` — `node.toml` (0600), `worker.log`, `worker.pid`, `node/` (the
//!   node's working directory: virtualenv, unpacked snapshots)

mod build;
mod layout;
mod logs;
mod orphans;
mod placement;
mod policy;
mod probe;
mod rollout;
mod settings;
mod spawn;
mod supervisor;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use ramen_lifecycle::TaskCenter;

pub use settings::{LocalSettings, MemoryLimit, NodeAdmin, WorkerCommand};

use crate::model::{PlacementRecord, ProviderKind, ZoneRecord};
use crate::provider::{
    ConfigTemplate, PlacementNames, PolicyPush, ProviderError, RolloutPlan, RolloutReport,
    StepOutcome, TeardownAction, TeardownTarget, WorkerEvents, WorkerView, ZoneProvider,
};
use layout::Layout;
use placement::LocalPlacement;

pub struct LocalProvider {
    settings: Arc<LocalSettings>,
    placements: Mutex<HashMap<String, Arc<LocalPlacement>>>,
    tasks: TaskCenter,
    events: WorkerEvents,
}

impl LocalProvider {
    pub fn new(settings: LocalSettings, tasks: TaskCenter, events: WorkerEvents) -> Self {
        Self { settings: Arc::new(settings), placements: Mutex::default(), tasks, events }
    }

    pub fn settings(&self) -> &LocalSettings {
        &self.settings
    }

    /// The placement's in-memory state, created on first use (after clearing processes a
    /// previous control plane left behind), with its record refreshed.
    fn placement(&self, record: &PlacementRecord) -> Arc<LocalPlacement> {
        let key = record.id();
        let mut placements = self.placements.lock();
        let entry = placements.entry(key).or_insert_with(|| {
            let layout = Layout::new(&self.settings.root, &record.zone, &record.group);
            orphans::stop_all(&layout);
            Arc::new(LocalPlacement::new(
                record.clone(),
                layout,
                self.settings.clone(),
                self.tasks.clone(),
                self.events.clone(),
            ))
        });
        entry.set_record(record.clone());
        entry.clone()
    }

    fn existing(&self, group: &str, zone: &str) -> Option<Arc<LocalPlacement>> {
        self.placements.lock().get(&crate::model::placement_id(group, zone)).cloned()
    }
}

#[async_trait]
impl ZoneProvider for LocalProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    fn names(&self, group: &str, _zone: &ZoneRecord, _namespace: &str) -> PlacementNames {
        PlacementNames {
            service_account: self.settings.user.clone(),
            route: format!("/mcp/{group}"),
        }
    }

    /// The working directory; the local user is the identity and grants are recorded only.
    async fn ensure(
        &self,
        record: &PlacementRecord,
        _grants: &[ramen_cloud::Grant],
    ) -> Result<Vec<String>, ProviderError> {
        self.placement(record).layout.create()?;
        Ok(Vec::new())
    }

    async fn write_config(
        &self,
        record: &PlacementRecord,
        config: &ConfigTemplate,
    ) -> Result<(), ProviderError> {
        let placement = self.placement(record);
        placement.layout.create()?;
        placement.layout.write_template(&placement.layout.written(), config)
    }

    async fn build_environment(
        &self,
        record: &PlacementRecord,
        snapshot: &ramen_node_contract::SnapshotRef,
        timeout: std::time::Duration,
    ) -> Result<ramen_node_contract::environment::BuildOutcome, ProviderError> {
        let placement = self.placement(record);
        placement.layout.create()?;
        build::run(&self.settings, &placement.layout, &record.group, snapshot, timeout).await
    }

    async fn apply_policy(&self, record: &PlacementRecord) -> Result<PolicyPush, ProviderError> {
        let placement = self.placement(record);
        Ok(policy::push(&placement, &self.settings).await)
    }

    async fn set_edge_rule(
        &self,
        record: &PlacementRecord,
        _members: &[crate::provider::EdgeMember],
    ) -> Result<(), ProviderError> {
        // The local edge (api-gateway) applies the rules it reads from ListEndpoints.
        self.placement(record);
        Ok(())
    }

    async fn rollout(
        &self,
        record: &PlacementRecord,
        plan: RolloutPlan,
    ) -> Result<RolloutReport, ProviderError> {
        let placement = self.placement(record);
        rollout::run(&placement, plan).await
    }

    async fn workers(&self, record: &PlacementRecord) -> Result<Vec<WorkerView>, ProviderError> {
        Ok(self.existing(&record.group, &record.zone).map(|p| p.views(None)).unwrap_or_default())
    }

    async fn resume(&self, record: &PlacementRecord) -> Result<(), ProviderError> {
        self.placement(record).resume()
    }

    async fn teardown(
        &self,
        target: &TeardownTarget,
        step: TeardownAction,
    ) -> Result<StepOutcome, ProviderError> {
        let (group, zone) = (target.group.as_str(), target.zone.as_str());
        let layout = Layout::new(&self.settings.root, zone, group);
        match step {
            TeardownAction::DrainWorkers => {
                let stopped = match self.existing(group, zone) {
                    Some(placement) => placement.stop_all().await,
                    None => 0,
                };
                let orphans = orphans::stop_all(&layout);
                Ok(StepOutcome::Done(format!(
                    "stopped {stopped} worker(s), {orphans} left over from before"
                )))
            }
            TeardownAction::RemoveRoute => {
                Ok(StepOutcome::Done("the local edge routes from ListEndpoints".into()))
            }
            TeardownAction::RemoveEdgeRule => {
                Ok(StepOutcome::Done("no edge rule outside the placement record".into()))
            }
            TeardownAction::RemoveIdentity => Ok(StepOutcome::Done(format!(
                "workers ran as {}; nothing to remove",
                self.settings.user
            ))),
            TeardownAction::RemoveNamespace => {
                self.placements.lock().remove(&crate::model::placement_id(group, zone));
                orphans::stop_all(&layout);
                layout.remove()
            }
        }
    }
}
