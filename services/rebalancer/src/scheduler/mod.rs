//! The auto-rebalance scheduler and the leadership that also gates the autoscaler.
//!
//! Replicas compete for one KV lease (`ramen-rebalancer-lease`, key `scheduler`, bucket TTL =
//! `lease_ttl`); the holder refreshes it every third of the TTL. A holder that dies stops
//! refreshing, the key expires within one TTL, and another replica's next acquire (also every
//! third of the TTL) takes it: takeover within `4/3 × lease_ttl`. A holder that finds its
//! refresh rejected stops at once. The leader runs the scheduler when its settings (owned here,
//! `settings.rs`) turn it on, at their interval, and the autoscaler; the last run is kept in a
//! second bucket so a new leader keeps the cadence and every replica can report it.

mod leader;
mod run;
mod settings;

pub use settings::{MIN_INTERVAL_SECONDS, SettingsChange, SettingsRecord, SettingsStore};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use ramen_bus::{Bus, BusError, Kv, KvSpec};
use serde::{Deserialize, Serialize};

pub use leader::LEASE_KEY;

use crate::actions::Rebalancer;
use crate::autoscaler::Autoscaler;
use crate::ports::{SchedulerSettings, SettingsPort};

pub const LEASE_BUCKET: &str = "ramen-rebalancer-lease";
pub const STATE_BUCKET: &str = "ramen-rebalancer-state";
const LAST_RUN_KEY: &str = "last-run";
/// Interval used when the settings turn the scheduler on without one.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);

/// The latest scheduled run, as kept in [`STATE_BUCKET`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    pub at_ms: i64,
    pub actions: u32,
    pub leader: String,
}

/// What `GetSchedulerStatus` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub enabled: bool,
    pub interval: Duration,
    pub leader: String,
    pub is_leader: bool,
    pub lease_expires_ms: Option<i64>,
    pub last_run: Option<LastRun>,
    pub next_run_ms: Option<i64>,
}

pub struct Scheduler {
    rebalancer: Arc<Rebalancer>,
    autoscaler: Arc<Autoscaler>,
    settings_store: SettingsStore,
    /// Where the settings were before this service owned them (read once, to carry them over).
    legacy_settings: Arc<dyn SettingsPort>,
    lease: Kv,
    state: Kv,
    config: Mutex<SchedulerSettings>,
    leader: AtomicBool,
    lease_expires_ms: AtomicI64,
}

impl Scheduler {
    pub async fn open(
        bus: &Bus,
        rebalancer: Arc<Rebalancer>,
        autoscaler: Arc<Autoscaler>,
        settings_store: SettingsStore,
        legacy_settings: Arc<dyn SettingsPort>,
    ) -> Result<Arc<Self>, BusError> {
        let ttl = rebalancer.settings.lease_ttl;
        let lease = bus
            .kv(&KvSpec { bucket: LEASE_BUCKET.into(), ttl: Some(ttl), ..KvSpec::default() })
            .await?;
        let state = bus.kv(&KvSpec { bucket: STATE_BUCKET.into(), ..KvSpec::default() }).await?;
        Ok(Arc::new(Self {
            rebalancer,
            autoscaler,
            settings_store,
            legacy_settings,
            lease,
            state,
            config: Mutex::default(),
            leader: AtomicBool::new(false),
            lease_expires_ms: AtomicI64::new(0),
        }))
    }

    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::SeqCst)
    }

    pub fn autoscaler(&self) -> &Arc<Autoscaler> {
        &self.autoscaler
    }

    /// The interval in force: the configured one, or [`DEFAULT_INTERVAL`] when unset.
    pub fn settings(&self) -> SchedulerSettings {
        let mut settings = *self.config.lock();
        if settings.interval.is_zero() {
            settings.interval = DEFAULT_INTERVAL;
        }
        settings
    }

    pub async fn last_run(&self) -> Option<LastRun> {
        let entry = self.state.get(LAST_RUN_KEY).await.ok()??;
        serde_json::from_slice(&entry.value).ok()
    }

    pub async fn status(&self) -> Status {
        let settings = self.settings();
        let leader = match self.lease.get(LEASE_KEY).await {
            Ok(Some(entry)) => String::from_utf8_lossy(&entry.value).into_owned(),
            _ => String::new(),
        };
        let is_leader = self.is_leader();
        let last_run = self.last_run().await;
        let next_run_ms = settings.enabled.then(|| {
            last_run
                .as_ref()
                .map(|r| r.at_ms + settings.interval.as_millis() as i64)
                .unwrap_or_else(crate::model::now_ms)
        });
        Status {
            enabled: settings.enabled,
            interval: settings.interval,
            leader,
            is_leader,
            lease_expires_ms: is_leader.then(|| self.lease_expires_ms.load(Ordering::SeqCst)),
            last_run,
            next_run_ms,
        }
    }
}
