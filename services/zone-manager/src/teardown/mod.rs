//! Tearing a placement down for real, as a resumable saga. Each step is idempotent and its
//! progress is stored (`zone_teardowns`), so a teardown interrupted by a crash is finished by
//! the next run: at start-up, or when Teardown is called again.
//!
//! Steps: `drain_workers`, `remove_route`, `remove_edge_rule`, `remove_identity`,
//! `remove_namespace` (the working directory locally), `delete_records`.

mod saga;
mod zones;

use std::sync::Arc;

use ramen_proto::events::v1::PlacementChange;
use ramen_store::Query;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::events::Caller;
use crate::manager::ZoneManager;
use crate::model::{PlacementPhase, ProviderKind, now_ms, placement_id};
use crate::store::group_zone;

pub const STEPS: [&str; 6] = [
    "drain_workers",
    "remove_route",
    "remove_edge_rule",
    "remove_identity",
    "remove_namespace",
    "delete_records",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeardownPhase {
    Running,
    Done,
    /// A step failed; the saga tries again (and calling Teardown again resumes it).
    Retrying,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub name: String,
    pub status: StepPhase,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub updated_at_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeardownRecord {
    pub group: String,
    pub zone: String,
    pub provider: ProviderKind,
    /// The zone's location (which cluster a Kubernetes zone's resources are in); kept here
    /// because the placement record is gone before the last steps run.
    #[serde(default)]
    pub region: String,
    pub state: TeardownPhase,
    pub steps: Vec<StepRecord>,
    pub started_at_ms: i64,
    #[serde(default)]
    pub finished_at_ms: i64,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub requested_by: String,
}

impl TeardownRecord {
    fn new(
        group: &str,
        zone: &str,
        (provider, region): (ProviderKind, String),
        caller: &Caller,
    ) -> Self {
        let now = now_ms();
        let steps = STEPS
            .iter()
            .map(|name| StepRecord {
                name: (*name).to_owned(),
                status: StepPhase::Pending,
                detail: String::new(),
                updated_at_ms: now,
            })
            .collect();
        Self {
            group: group.to_owned(),
            zone: zone.to_owned(),
            provider,
            region,
            state: TeardownPhase::Running,
            steps,
            started_at_ms: now,
            finished_at_ms: 0,
            error: String::new(),
            attempts: 0,
            requested_by: caller.actor.clone(),
        }
    }

    pub fn id(&self) -> String {
        placement_id(&self.group, &self.zone)
    }

    /// The first step not done yet.
    pub fn next_step(&self) -> Option<&str> {
        self.steps.iter().find(|s| s.status != StepPhase::Succeeded).map(|s| s.name.as_str())
    }
}

impl ZoneManager {
    /// Tears down one placement, or every placement of the group when `zone` is empty (group
    /// deletion). Returns at once with the progress; the saga runs in the background.
    pub async fn teardown(
        self: &Arc<Self>,
        caller: &Caller,
        group: &str,
        zone: &str,
    ) -> Result<Vec<TeardownRecord>> {
        crate::validate::dns_label("group", group)?;
        if !zone.is_empty() {
            return Ok(vec![self.start_teardown(caller, group, zone).await?]);
        }
        let mut zones: Vec<String> = self
            .db
            .placements
            .find(&Query::new().filter(group_zone(group, "")))
            .await?
            .into_iter()
            .map(|p| p.value.zone)
            .collect();
        for unfinished in self.teardowns_of(group, "").await? {
            if unfinished.state != TeardownPhase::Done && !zones.contains(&unfinished.zone) {
                zones.push(unfinished.zone);
            }
        }
        let mut progress = Vec::new();
        for zone in zones {
            progress.push(self.start_teardown(caller, group, &zone).await?);
        }
        Ok(progress)
    }

    /// The stored progress of the group's teardowns (one zone, or all).
    pub async fn teardowns_of(&self, group: &str, zone: &str) -> Result<Vec<TeardownRecord>> {
        let found = self
            .db
            .teardowns
            .find(&Query::new().filter(group_zone(group, zone)).sort_asc("zone"))
            .await?;
        Ok(found.into_iter().map(|t| t.value).collect())
    }

    /// Records the teardown (or finds the unfinished one) and makes sure a saga runs it.
    pub async fn start_teardown(
        self: &Arc<Self>,
        caller: &Caller,
        group: &str,
        zone: &str,
    ) -> Result<TeardownRecord> {
        let record = self.record_teardown(caller, group, zone).await?;
        self.spawn_saga(&record.id());
        Ok(record)
    }

    /// The first half of [`start_teardown`](Self::start_teardown): the stored teardown (a new
    /// one, or the unfinished one) and the placement marked as tearing down, without running
    /// any step. [`run_teardown`](Self::run_teardown) runs them.
    pub async fn record_teardown(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
    ) -> Result<TeardownRecord> {
        crate::validate::dns_label("zone", zone)?;
        let id = placement_id(group, zone);
        let existing = self.db.teardowns.get(&id).await?.map(|t| t.value);
        let placement = self.find_placement(group, zone).await?.map(|p| p.value);
        let record = match existing {
            Some(unfinished) if unfinished.state != TeardownPhase::Done => unfinished,
            _ => {
                let provider = match (&placement, self.zone(zone).await) {
                    (Some(p), _) => (p.provider, p.region.clone()),
                    (None, Ok(zone)) => (zone.provider, zone.region),
                    (None, Err(_)) => {
                        return Err(Error::NotFound(format!(
                            "placement of group `{group}` in zone `{zone}`"
                        )));
                    }
                };
                let record = TeardownRecord::new(group, zone, provider, caller);
                self.db.teardowns.put(&id, &record).await?;
                record
            }
        };
        self.mark_tearing_down(caller, group, zone).await?;
        Ok(record)
    }

    async fn mark_tearing_down(&self, caller: &Caller, group: &str, zone: &str) -> Result<()> {
        let id = placement_id(group, zone);
        let marked = self
            .db
            .placements
            .modify(&id, |p| {
                let first = p.status != PlacementPhase::TearingDown;
                p.status = PlacementPhase::TearingDown;
                p.status_message = "teardown in progress".into();
                p.updated_at_ms = now_ms();
                p.revision += 1;
                Ok::<_, Error>(first)
            })
            .await;
        match marked {
            Ok((written, true)) => {
                self.events
                    .placement(&written.value, PlacementChange::TeardownStarted, caller)
                    .await;
                Ok(())
            }
            Ok((_, false)) => Ok(()),
            Err(Error::Store(ramen_store::StoreError::NotFound { .. })) => Ok(()),
            Err(err) => Err(err),
        }
    }
}
