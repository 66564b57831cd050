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
    /// Held while a placement is checked against the groups already on the host and created.
    sharing: Mutex<()>,
    tasks: TaskCenter,
    events: WorkerEvents,
}

impl LocalProvider {
    pub fn new(settings: LocalSettings, tasks: TaskCenter, events: WorkerEvents) -> Self {
        Self {
            settings: Arc::new(settings),
            placements: Mutex::default(),
            sharing: Mutex::default(),
            tasks,
            events,
        }
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

    /// Groups can share this host only when their code is confined from each other: with the
    /// sandbox on and a kernel that cannot confine files and TCP, the local zones host one
    /// group; `zone.sandbox = "off"` is the operator's choice to share anyway.
    fn check_sharing(&self, group: &str) -> Result<(), ProviderError> {
        let settings = &self.settings;
        if !settings.sandbox || settings.support.complete() {
            return Ok(());
        }
        let Some(other) = layout::groups_on_host(&settings.root).into_iter().find(|g| g != group)
        else {
            return Ok(());
        };
        Err(ProviderError::Failed(format!(
            "this host cannot keep groups apart ({}), and its local zones already run group \
             {other:?}: they take no second group. Use a kernel with Landlock ABI 4 or newer \
             (Linux 6.7), or set zone.sandbox = \"off\" to share the host unconfined",
            settings.support.describe()
        )))
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
    /// On a host whose kernel cannot confine group code, a second group is refused.
    async fn ensure(
        &self,
        record: &PlacementRecord,
        _grants: &ramen_cloud::Grants,
    ) -> Result<Vec<String>, ProviderError> {
        let _sharing = self.sharing.lock();
        self.check_sharing(&record.group)?;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ramen_access::TicketKeys;
    use ramen_config::{Config, SandboxMode};
    use ramen_lifecycle::TaskCenter;
    use ramen_sandbox::Support;
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn provider(root: &std::path::Path, abi: i32, mode: SandboxMode) -> LocalProvider {
        let mut config = Config { data_dir: root.to_path_buf(), ..Config::default() };
        config.zone.sandbox = mode;
        let keys = Arc::new(TicketKeys::new(b"0123456789abcdef0123456789abcdef", None));
        let nodes = NodeAdmin::new(Arc::new(ramen_clients::GrpcNode::new(keys.clone())), keys);
        let mut settings = LocalSettings::from_config(&config, String::new(), nodes).unwrap();
        settings.support = Support { abi };
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        LocalProvider::new(settings, TaskCenter::new(&CancellationToken::new()), events)
    }

    fn placement(group: &str, zone: &str) -> PlacementRecord {
        PlacementRecord { group: group.into(), zone: zone.into(), ..PlacementRecord::default() }
    }

    #[tokio::test]
    async fn a_host_that_cannot_confine_group_code_takes_one_group() {
        use ramen_cloud::Grants;
        let dir = tempfile::tempdir().unwrap();
        let weak = provider(dir.path(), 3, SandboxMode::On);
        weak.ensure(&placement("victim", "z1"), &Grants::none()).await.unwrap();
        weak.ensure(&placement("victim", "z2"), &Grants::none())
            .await
            .expect("the same group, another zone");
        let refused =
            weak.ensure(&placement("evil", "z1"), &Grants::none()).await.unwrap_err().to_string();
        assert!(refused.contains("\"victim\"") && refused.contains("zone.sandbox"), "{refused}");
        assert!(refused.contains("TCP connects"), "says what the kernel lacks: {refused}");
        assert!(
            !dir.path().join("zones/z1/evil").exists(),
            "nothing created for the refused group"
        );

        let unconfined = provider(dir.path(), 3, SandboxMode::Off);
        unconfined
            .ensure(&placement("evil", "z1"), &Grants::none())
            .await
            .expect("the operator chose to share");
        let confining = provider(dir.path(), 7, SandboxMode::On);
        confining
            .ensure(&placement("third", "z1"), &Grants::none())
            .await
            .expect("a kernel that confines");
    }
}
