//! The zone-manager's behaviour, independent of gRPC: zones, placements, tracks, policy,
//! packages, the local edge. The gRPC layer (`api`) converts and audits; this does the work.

mod cloud;
mod edge;
mod packages;
mod placements;
mod policy;
mod tracks;
mod zones;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ramen_lifecycle::TaskCenter;
use ramen_proto::events::v1::PlacementChange;
use ramen_store::{StoreError, Versioned};

pub use edge::{DEFAULT_WEIGHT, Endpoint, MAX_WEIGHT, ZoneEndpoints};
pub use packages::ZonePackage;
pub use policy::{IpRulesChange, LivePolicy};
pub use tracks::RolloutOutcome;
pub use zones::{GroupCount, ZoneSummary};

use crate::error::{Error, Result};
use crate::events::Publisher;
use crate::model::{PlacementPhase, PlacementRecord, ZoneRecord, now_ms, placement_id};
use crate::provider::{Providers, ZoneProvider};
use crate::store::Db;
use ramen_clients::AuthClient;

/// Settings of the service (from `zone.*` in the configuration).
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long a restart or scale waits for ready when the request names no timeout.
    pub restart_timeout: Duration,
    pub max_worker_count: u32,
    pub teardown_retention: Duration,
    /// How often cloud placements' routes are re-synced with their pods (zero: never).
    pub route_sync_interval: Duration,
}

pub struct ZoneManager {
    pub(crate) db: Db,
    pub(crate) providers: Providers,
    pub(crate) auth: Arc<dyn AuthClient>,
    pub(crate) events: Publisher,
    pub(crate) settings: Settings,
    pub(crate) tasks: TaskCenter,
    /// Serialises rollouts and teardown per placement (policy pushes do not wait for them).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Teardown sagas running in this process.
    pub(crate) running_teardowns: Mutex<HashSet<String>>,
}

impl ZoneManager {
    pub fn new(
        db: Db,
        providers: Providers,
        auth: Arc<dyn AuthClient>,
        events: Publisher,
        settings: Settings,
        tasks: TaskCenter,
    ) -> Self {
        Self {
            db,
            providers,
            auth,
            events,
            settings,
            tasks,
            locks: Mutex::default(),
            running_teardowns: Mutex::default(),
        }
    }

    pub(crate) fn lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.locks.lock().entry(id.to_owned()).or_default().clone()
    }

    pub(crate) async fn zone(&self, name: &str) -> Result<ZoneRecord> {
        self.db
            .zones
            .get(name)
            .await?
            .map(|z| z.value)
            .ok_or_else(|| Error::NotFound(format!("zone `{name}`")))
    }

    pub(crate) async fn find_placement(
        &self,
        group: &str,
        zone: &str,
    ) -> Result<Option<Versioned<PlacementRecord>>> {
        Ok(self.db.placements.get(&placement_id(group, zone)).await?)
    }

    pub async fn placement(&self, group: &str, zone: &str) -> Result<PlacementRecord> {
        self.find_placement(group, zone).await?.map(|p| p.value).ok_or_else(|| {
            Error::NotFound(format!("placement of group `{group}` in zone `{zone}`"))
        })
    }

    /// A placement that can still be changed (not being torn down).
    pub(crate) async fn live_placement(&self, group: &str, zone: &str) -> Result<PlacementRecord> {
        let placement = self.placement(group, zone).await?;
        refuse_tearing_down(&placement)?;
        Ok(placement)
    }

    /// Read-modify-write of a live placement; `change` may run more than once. Every write bumps
    /// the record's revision so providers can tell a newer record from an older one.
    pub(crate) async fn update_placement<F>(
        &self,
        group: &str,
        zone: &str,
        mut change: F,
    ) -> Result<PlacementRecord>
    where
        F: FnMut(&mut PlacementRecord) -> Result<()> + Send,
    {
        let id = placement_id(group, zone);
        let result = self
            .db
            .placements
            .modify(&id, |p| {
                refuse_tearing_down(p)?;
                change(p)?;
                p.updated_at_ms = now_ms();
                p.revision += 1;
                Ok::<_, Error>(())
            })
            .await;
        match result {
            Ok((written, ())) => Ok(written.value),
            Err(Error::Store(StoreError::NotFound { .. })) => {
                Err(Error::NotFound(format!("placement of group `{group}` in zone `{zone}`")))
            }
            Err(err) => Err(err),
        }
    }

    pub(crate) fn provider_for(
        &self,
        placement: &PlacementRecord,
    ) -> Result<Arc<dyn ZoneProvider>> {
        self.providers.get(placement.provider, &placement.zone)
    }

    /// Sets the placement's status when it differs, and says so on the bus.
    pub(crate) async fn set_status(
        &self,
        group: &str,
        zone: &str,
        status: PlacementPhase,
        message: String,
    ) -> Result<PlacementRecord> {
        let before = self.placement(group, zone).await?;
        if before.status == status && before.status_message == message {
            return Ok(before);
        }
        let after = self
            .update_placement(group, zone, |p| {
                p.status = status;
                p.status_message = message.clone();
                Ok(())
            })
            .await?;
        self.events.placement(&after, PlacementChange::Status, &crate::events::own_caller()).await;
        Ok(after)
    }
}

fn refuse_tearing_down(placement: &PlacementRecord) -> Result<()> {
    if placement.status == PlacementPhase::TearingDown {
        return Err(Error::FailedPrecondition(format!(
            "placement {} is being torn down; see GetTeardown",
            placement.label()
        )));
    }
    Ok(())
}
