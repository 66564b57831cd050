//! What the rebalancer knows of zones and placements, re-read from the zone-manager every
//! `placement_refresh` (a placement's bounds change rarely; cells need them only for display
//! and the autoscaler). A failed refresh keeps the last good copy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use ramen_lifecycle::TaskCenter;

use crate::ports::{PlacementInfo, PortError, ZoneInfo, ZonePort};

#[derive(Debug, Default)]
pub struct Catalog {
    pub zones: HashMap<String, ZoneInfo>,
    pub placements: BTreeMap<(String, String), PlacementInfo>,
}

impl Catalog {
    pub fn placement(&self, group: &str, zone: &str) -> Option<&PlacementInfo> {
        self.placements.get(&(group.to_owned(), zone.to_owned()))
    }
}

pub struct CatalogHandle {
    zones: Arc<dyn ZonePort>,
    current: ArcSwap<Catalog>,
}

impl CatalogHandle {
    pub fn new(zones: Arc<dyn ZonePort>) -> Self {
        Self { zones, current: ArcSwap::default() }
    }

    pub fn get(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    pub async fn refresh(&self) -> Result<Arc<Catalog>, PortError> {
        let zones = self.zones.zones().await?;
        let placements = self.zones.placements().await?;
        let catalog = Arc::new(Catalog {
            zones: zones.into_iter().map(|z| (z.name.clone(), z)).collect(),
            placements: placements
                .into_iter()
                .map(|p| ((p.group.clone(), p.zone.clone()), p))
                .collect(),
        });
        self.current.store(catalog.clone());
        Ok(catalog)
    }

    /// A zone, asking the zone-manager when the copy does not know it yet.
    pub async fn zone(&self, name: &str) -> Result<ZoneInfo, PortError> {
        if let Some(zone) = self.get().zones.get(name) {
            return Ok(zone.clone());
        }
        self.zones.zone(name).await
    }

    /// Refreshes now and then every `every` until shutdown, in task `rebalancer-catalog`.
    pub fn spawn_refresh(self: &Arc<Self>, tasks: &TaskCenter, every: Duration) {
        let this = self.clone();
        tasks.spawn("rebalancer-catalog", move |stop| async move {
            let mut warned = false;
            loop {
                match this.refresh().await {
                    Ok(_) => warned = false,
                    Err(err) if !warned => {
                        tracing::warn!(%err, "cannot read zones and placements; keeping the last copy");
                        warned = true;
                    }
                    Err(err) => tracing::debug!(%err, "zones and placements still unreadable"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
    }
}
