//! Zone records and the zones page.

use std::sync::Arc;

use ramen_proto::common::v1::PageInfo;
use ramen_store::{Query, StoreError};

use super::ZoneManager;
use crate::error::{Error, Result};
use crate::events::Caller;
use crate::model::{ProviderKind, SizeClass, TrackKind, WorkerPhase, ZoneRecord, now_ms};
use crate::store::{Page, group_zone};
use crate::teardown::TeardownRecord;
use crate::validate;

/// One zone on the zones page: worker counts per group, from the workers actually running.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneSummary {
    pub zone: ZoneRecord,
    pub groups: Vec<GroupCount>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupCount {
    pub group: String,
    /// Ready workers per track.
    pub worker: u32,
    pub canary: u32,
    /// Present but not ready (starting, failing, draining, exited and about to be replaced).
    pub not_ready: u32,
    /// The placement's worker count (autoscaler minimum).
    pub desired: u32,
}

impl ZoneManager {
    /// Creates the record only: nothing runs until a deploy places a group there.
    pub async fn create_zone(
        &self,
        name: String,
        provider: ProviderKind,
        region: String,
        sizes: Vec<SizeClass>,
    ) -> Result<ZoneRecord> {
        validate::dns_label("name", &name)?;
        validate::region(provider, &region)?;
        let record = ZoneRecord {
            name,
            provider,
            region,
            allowed_sizes: validate::allowed_sizes(sizes),
            created_at_ms: now_ms(),
            deleting: false,
        };
        match self.db.zones.insert(&record.name, &record).await {
            Ok(_) => Ok(record),
            Err(StoreError::AlreadyExists { .. }) => {
                Err(Error::AlreadyExists(format!("zone `{}`", record.name)))
            }
            Err(err) => Err(err.into()),
        }
    }

    pub async fn get_zone(&self, name: &str) -> Result<ZoneRecord> {
        self.zone(name).await
    }

    pub async fn list_zones(&self, page: Page) -> Result<(Vec<ZoneRecord>, PageInfo)> {
        let total = self.db.zones.count(&Default::default()).await?;
        let found = self.db.zones.find(&page.query(Query::new())).await?;
        Ok(page.finish(found.into_iter().map(|z| z.value).collect(), total))
    }

    /// Marks the zone deleting and tears down every placement in it; the record goes (and
    /// `ZoneDeleted` is published) once the last teardown is done.
    pub async fn delete_zone(
        self: &Arc<Self>,
        caller: &Caller,
        name: &str,
    ) -> Result<Vec<TeardownRecord>> {
        self.db
            .zones
            .modify(name, |zone| {
                zone.deleting = true;
                Ok::<_, Error>(())
            })
            .await
            .map_err(|err| match err {
                Error::Store(StoreError::NotFound { .. }) => {
                    Error::NotFound(format!("zone `{name}`"))
                }
                other => other,
            })?;
        let placements =
            self.db.placements.find(&Query::new().filter(group_zone("", name))).await?;
        let mut progress = Vec::new();
        for placement in placements {
            progress.push(self.start_teardown(caller, &placement.value.group, name).await?);
        }
        self.finish_zone_deletion(name).await?;
        Ok(progress)
    }

    pub async fn zone_summaries(
        &self,
        page: Page,
        groups: &[String],
    ) -> Result<(Vec<ZoneSummary>, PageInfo)> {
        let (zones, info) = self.list_zones(page).await?;
        let mut summaries = Vec::with_capacity(zones.len());
        for zone in zones {
            let groups = self.group_counts(&zone, groups).await?;
            summaries.push(ZoneSummary { zone, groups });
        }
        Ok((summaries, info))
    }

    async fn group_counts(&self, zone: &ZoneRecord, groups: &[String]) -> Result<Vec<GroupCount>> {
        let placements =
            self.db.placements.find(&Query::new().filter(group_zone("", &zone.name))).await?;
        let mut counts = Vec::new();
        for placement in placements.into_iter().map(|p| p.value) {
            if !groups.is_empty() && !groups.contains(&placement.group) {
                continue;
            }
            let workers = match self.provider_for(&placement) {
                Ok(provider) => provider.workers(&placement).await?,
                Err(_) => Vec::new(),
            };
            let mut count = GroupCount {
                group: placement.group.clone(),
                desired: placement.worker_count,
                ..Default::default()
            };
            for worker in workers {
                match (worker.state, worker.track) {
                    (WorkerPhase::Ready, TrackKind::Worker) => count.worker += 1,
                    (WorkerPhase::Ready, TrackKind::Canary) => count.canary += 1,
                    _ => count.not_ready += 1,
                }
            }
            counts.push(count);
        }
        Ok(counts)
    }
}
