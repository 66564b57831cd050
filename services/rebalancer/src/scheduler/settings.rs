//! Following the Config settings (owned by the deployer): `SettingsChanged` on the bus applies
//! at once, and `GetSettings` is asked at start and every `settings_refresh` in case an event
//! was missed. A failed read keeps the settings last known (off until one succeeds).

use std::sync::Arc;

use ramen_bus::{Bus, BusError};
use ramen_lifecycle::TaskCenter;
use ramen_proto::events::v1::SettingsChanged;

use super::Scheduler;
use crate::ports::SchedulerSettings;

impl Scheduler {
    pub fn set_settings(&self, settings: SchedulerSettings) {
        let mut current = self.config.lock();
        if *current != settings {
            tracing::info!(enabled = settings.enabled, interval = ?settings.interval, "auto-rebalance settings");
            *current = settings;
        }
    }

    /// Subscribes now, then follows the settings in task `rebalancer-settings`.
    pub async fn spawn_settings(
        self: &Arc<Self>,
        bus: &Bus,
        tasks: &TaskCenter,
    ) -> Result<(), BusError> {
        let mut events = bus.subscribe(&ramen_service::subject::<SettingsChanged>()).await?;
        let this = self.clone();
        let every = self.rebalancer.settings.settings_refresh;
        tasks.spawn("rebalancer-settings", move |stop| async move {
            let mut warned = false;
            loop {
                match this.settings_port.get().await {
                    Ok(settings) => {
                        this.set_settings(settings);
                        warned = false;
                    }
                    Err(err) if !warned => {
                        tracing::warn!(%err, "cannot read the Config settings; keeping the last known");
                        warned = true;
                    }
                    Err(err) => tracing::debug!(%err, "Config settings still unreadable"),
                }
                let deadline = tokio::time::sleep(every);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = &mut deadline => break,
                        event = events.next() => match event {
                            Some(event) => this.set_settings(from_event(&event.payload)),
                            None => return,
                        },
                    }
                }
            }
        });
        Ok(())
    }
}

fn from_event(event: &SettingsChanged) -> SchedulerSettings {
    SchedulerSettings {
        enabled: event.auto_rebalance_enabled,
        interval: std::time::Duration::from_secs(u64::from(event.auto_rebalance_interval_seconds)),
    }
}
