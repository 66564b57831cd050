//! Placements (group × zone): creation, listing, worker count and size.

use ramen_proto::common::v1::PageInfo;
use ramen_proto::events::v1::PlacementChange;
use ramen_store::{Query, StoreError};

use super::ZoneManager;
use crate::error::{Error, Result};
use crate::events::Caller;
use crate::model::{
    PlacementPhase, PlacementRecord, SizeClass, TrackKind, TrackRecord, ZoneRecord, now_ms,
    placement_id,
};
use crate::provider::PlacementNames;
use crate::store::{Page, group_zone};
use crate::teardown::TeardownPhase;
use crate::validate;

impl ZoneManager {
    /// Creates the record if missing, then creates or completes the provider's resources.
    pub async fn ensure_placement(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
    ) -> Result<PlacementRecord> {
        validate::dns_label("group", group)?;
        validate::dns_label("zone", zone)?;
        let namespace = validate::namespace(group, zone)?;
        let zone_record = self.zone(zone).await?;
        if zone_record.deleting {
            return Err(Error::FailedPrecondition(format!("zone `{zone}` is being deleted")));
        }
        let provider = self.providers.get(zone_record.provider, zone)?;
        let id = placement_id(group, zone);
        let lock = self.lock(&id);
        let _guard = lock.lock().await;
        if let Some(teardown) = self.db.teardowns.get(&id).await?
            && teardown.value.state != TeardownPhase::Done
        {
            return Err(Error::FailedPrecondition(format!(
                "placement {id} is being torn down; see GetTeardown"
            )));
        }
        let record = match self.find_placement(group, zone).await? {
            Some(existing) => existing.value,
            None => {
                let names = provider.names(group, &zone_record, &namespace);
                self.create_placement(caller, &zone_record, group, namespace, names).await?
            }
        };
        super::refuse_tearing_down(&record)?;
        let grants = self.grants(group, record.provider).await?;
        let resources = provider.ensure(&record, &grants).await?;
        let record = if resources == record.cloud_resources {
            record
        } else {
            self.update_placement(group, zone, |p| {
                p.cloud_resources = resources.clone();
                Ok(())
            })
            .await?
        };
        // A zone joining (or coming back to) the group changes what the group's edge allows.
        self.set_group_edge_rule(&record).await?;
        if matches!(record.status, PlacementPhase::Pending | PlacementPhase::Provisioning) {
            return self
                .set_status(
                    group,
                    zone,
                    PlacementPhase::Ready,
                    "provisioned; nothing deployed yet".into(),
                )
                .await;
        }
        Ok(record)
    }

    /// Stores a new placement (PROVISIONING) and announces it; a concurrent creation wins.
    async fn create_placement(
        &self,
        caller: &Caller,
        zone: &ZoneRecord,
        group: &str,
        namespace: String,
        names: PlacementNames,
    ) -> Result<PlacementRecord> {
        let now = now_ms();
        let record = PlacementRecord {
            group: group.to_owned(),
            zone: zone.name.clone(),
            provider: zone.provider,
            region: zone.region.clone(),
            namespace,
            service_account: names.service_account,
            route: names.route,
            size: zone.allowed_sizes.first().copied().unwrap_or(SizeClass::S),
            worker: TrackRecord { replicas: 1, commit: String::new() },
            canary: TrackRecord { replicas: 1, commit: String::new() },
            status: PlacementPhase::Provisioning,
            created_at_ms: now,
            updated_at_ms: now,
            revision: 1,
            ..PlacementRecord::default()
        };
        match self.db.placements.insert(&record.id(), &record).await {
            Ok(_) => self.events.placement(&record, PlacementChange::Created, caller).await,
            Err(StoreError::AlreadyExists { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        self.placement(group, &zone.name).await
    }

    pub async fn list_placements(
        &self,
        group: &str,
        zone: &str,
        page: Page,
    ) -> Result<(Vec<PlacementRecord>, PageInfo)> {
        let filter = group_zone(group, zone);
        let total = self.db.placements.count(&filter).await?;
        let found = self.db.placements.find(&page.query(Query::new().filter(filter))).await?;
        Ok(page.finish(found.into_iter().map(|p| p.value).collect(), total))
    }

    /// Sets the autoscaler's minimum (the maximum is twice it) and brings a deployed stable
    /// track inside the new bounds.
    pub async fn set_worker_count(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        count: u32,
    ) -> Result<PlacementRecord> {
        validate::worker_count(count, self.settings.max_worker_count)?;
        let lock = self.lock(&placement_id(group, zone));
        let _guard = lock.lock().await;
        let before = self.live_placement(group, zone).await?;
        let deployed = !before.worker.commit.is_empty();
        let record = self
            .update_placement(group, zone, |p| {
                p.worker_count = count;
                p.worker.replicas =
                    if deployed { p.worker.replicas.clamp(count, count * 2) } else { count };
                Ok(())
            })
            .await?;
        self.events.placement(&record, PlacementChange::WorkerCount, caller).await;
        if deployed && record.worker.replicas != before.worker.replicas {
            let replicas = record.worker.replicas;
            self.roll(&record, TrackKind::Worker, replicas, false).await?;
        }
        self.placement(group, zone).await
    }

    /// Only a size the zone allows; running workers are rolled onto it.
    pub async fn set_size(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        size: SizeClass,
    ) -> Result<PlacementRecord> {
        let zone_record = self.zone(zone).await?;
        if !zone_record.allows(size) {
            let allowed: Vec<&str> = zone_record.allowed_sizes.iter().map(|s| s.name()).collect();
            return Err(Error::FailedPrecondition(format!(
                "size {} is not allowed in zone `{zone}` (allowed: {})",
                size.describe(),
                allowed.join(", ")
            )));
        }
        let lock = self.lock(&placement_id(group, zone));
        let _guard = lock.lock().await;
        let before = self.live_placement(group, zone).await?;
        if before.size == size {
            return Ok(before);
        }
        let record = self
            .update_placement(group, zone, |p| {
                p.size = size;
                Ok(())
            })
            .await?;
        self.events.placement(&record, PlacementChange::Size, caller).await;
        self.roll_running(&record).await?;
        self.placement(group, zone).await
    }
}
