//! The auto-rebalance settings (the Config page's scheduler switch and period), owned here:
//! one record in `rebalancer_settings` that every replica shares. `UpdateSchedulerSettings`
//! writes it, applies it to its own replica and publishes `SchedulerSettingsChanged` so the
//! others apply it at once; every replica also re-reads the record each `settings_refresh`, in
//! case an event was missed.
//!
//! Before this service owned them the deployer did: with no record yet, the settings the
//! deployer still holds are carried over once (`SettingsPort`), so an upgrade loses nothing.

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::{Bus, BusError};
use ramen_lifecycle::TaskCenter;
use ramen_proto::events::v1::{EventMeta, SchedulerSettingsChanged};
use ramen_store::{Collection, CollectionSpec, DocumentStore, StoreError};
use serde::{Deserialize, Serialize};

use super::Scheduler;
use crate::error::Error;
use crate::model::{Caller, now_ms};
use crate::ports::SchedulerSettings;

pub const COLLECTION: &str = "rebalancer_settings";
const RECORD_ID: &str = "scheduler";
/// Shortest scheduler period accepted (a rebalance rolls LB weights; faster is churn).
pub const MIN_INTERVAL_SECONDS: u32 = ramen_service::rules::REBALANCE_INTERVAL_SECONDS.0;
pub const MAX_INTERVAL_SECONDS: u32 = ramen_service::rules::REBALANCE_INTERVAL_SECONDS.1;

/// `rebalancer_settings/scheduler`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsRecord {
    pub enabled: bool,
    pub interval_seconds: u32,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

impl SettingsRecord {
    pub fn scheduler(&self) -> SchedulerSettings {
        SchedulerSettings {
            enabled: self.enabled,
            interval: Duration::from_secs(u64::from(self.interval_seconds)),
        }
    }
}

/// What `UpdateSchedulerSettings` asks for; `None` keeps the value.
#[derive(Clone, Copy, Debug, Default)]
pub struct SettingsChange {
    pub enabled: Option<bool>,
    pub interval_seconds: Option<u32>,
}

#[derive(Clone)]
pub struct SettingsStore {
    records: Collection<SettingsRecord>,
}

impl SettingsStore {
    pub async fn open(store: Arc<dyn DocumentStore>) -> Result<Self, StoreError> {
        store.ensure_collection(&CollectionSpec::new(COLLECTION)).await?;
        Ok(Self { records: Collection::new(store, COLLECTION) })
    }

    pub async fn get(&self) -> Result<Option<SettingsRecord>, StoreError> {
        Ok(self.records.get(RECORD_ID).await?.map(|r| r.value))
    }

    async fn put(&self, record: &SettingsRecord) -> Result<(), StoreError> {
        self.records.put(RECORD_ID, record).await.map(|_| ())
    }
}

impl Scheduler {
    pub fn set_settings(&self, settings: SchedulerSettings) {
        let mut current = self.config.lock();
        if *current != settings {
            tracing::info!(enabled = settings.enabled, interval = ?settings.interval, "auto-rebalance settings");
            *current = settings;
        }
    }

    /// The stored settings (the default period, off, when none were ever set).
    pub async fn settings_record(&self) -> Result<SettingsRecord, Error> {
        let default = SettingsRecord {
            interval_seconds: super::DEFAULT_INTERVAL.as_secs() as u32,
            ..SettingsRecord::default()
        };
        Ok(self.settings_store.get().await?.unwrap_or(default))
    }

    /// Validates and stores a change, applies it here and tells the other replicas.
    pub async fn update_settings(
        &self,
        caller: &Caller,
        change: SettingsChange,
    ) -> Result<SettingsRecord, Error> {
        if let Some(interval) = change.interval_seconds
            && !(MIN_INTERVAL_SECONDS..=MAX_INTERVAL_SECONDS).contains(&interval)
        {
            return Err(Error::invalid(
                "auto_rebalance_interval_seconds",
                format!(
                    "must be from {MIN_INTERVAL_SECONDS} to {MAX_INTERVAL_SECONDS} (a day; to stop rebalancing, set auto_rebalance_enabled = false)"
                ),
            ));
        }
        let mut record = self.settings_record().await?;
        if let Some(enabled) = change.enabled {
            record.enabled = enabled;
        }
        if let Some(interval) = change.interval_seconds {
            record.interval_seconds = interval;
        }
        record.updated_at_ms = now_ms();
        record.updated_by = caller.audit_actor().to_owned();
        self.settings_store.put(&record).await?;
        self.set_settings(record.scheduler());
        let event = SchedulerSettingsChanged {
            meta: Some(EventMeta {
                event_id: uuid::Uuid::now_v7().to_string(),
                at_unix_ms: record.updated_at_ms,
                actor: caller.audit_actor().to_owned(),
                request_id: caller.request_id.clone(),
            }),
            enabled: record.enabled,
            interval_seconds: record.interval_seconds,
        };
        self.rebalancer.events().scheduler_settings(&event).await;
        Ok(record)
    }

    /// Subscribes now, then follows the settings in task `rebalancer-settings`.
    pub async fn spawn_settings(
        self: &Arc<Self>,
        bus: &Bus,
        tasks: &TaskCenter,
    ) -> Result<(), BusError> {
        let mut events =
            bus.subscribe(&ramen_service::subject::<SchedulerSettingsChanged>()).await?;
        let this = self.clone();
        let every = self.rebalancer.settings.settings_refresh;
        tasks.spawn("rebalancer-settings", move |stop| async move {
            let mut warned = false;
            loop {
                match this.read_settings().await {
                    Ok(settings) => {
                        this.set_settings(settings);
                        warned = false;
                    }
                    Err(err) if !warned => {
                        tracing::warn!(%err, "cannot read the scheduler settings; keeping the last known");
                        warned = true;
                    }
                    Err(err) => tracing::debug!(%err, "scheduler settings still unreadable"),
                }
                let deadline = tokio::time::sleep(every);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = &mut deadline => break,
                        event = events.next() => match event {
                            Some(event) => this.set_settings(SchedulerSettings {
                                enabled: event.payload.enabled,
                                interval: Duration::from_secs(u64::from(event.payload.interval_seconds)),
                            }),
                            None => return,
                        },
                    }
                }
            }
        });
        Ok(())
    }

    /// The stored settings; with none stored yet, the deployer's (where they lived before),
    /// stored here once they could be read.
    async fn read_settings(&self) -> Result<SchedulerSettings, Error> {
        if let Some(record) = self.settings_store.get().await? {
            return Ok(record.scheduler());
        }
        let legacy =
            self.legacy_settings.get().await.map_err(|e| Error::Unavailable(e.to_string()))?;
        let record = SettingsRecord {
            enabled: legacy.enabled,
            interval_seconds: legacy.interval.as_secs() as u32,
            updated_at_ms: now_ms(),
            updated_by: "carried over from the deployer".into(),
        };
        self.settings_store.put(&record).await?;
        Ok(record.scheduler())
    }
}
