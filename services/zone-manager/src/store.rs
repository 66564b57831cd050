//! The collections the zone-manager owns, and paging over them.

use std::sync::Arc;

use ramen_proto::common::v1::PageRequest;
use ramen_store::{Collection, CollectionSpec, DocumentStore, Filter, StoreError};

use crate::error::{Error, Result};
use crate::model::{PackagesRecord, PlacementRecord, WorkerRecord, ZoneRecord};
use crate::teardown::TeardownRecord;

pub const ZONES: &str = "zone_zones";
pub const PLACEMENTS: &str = "zone_placements";
pub const WORKERS: &str = "zone_workers";
pub const PACKAGES: &str = "zone_packages";
pub const TEARDOWNS: &str = "zone_teardowns";

/// Page size when a request asks for none, and the most a request gets.

#[derive(Clone)]
pub struct Db {
    pub zones: Collection<ZoneRecord>,
    pub placements: Collection<PlacementRecord>,
    pub workers: Collection<WorkerRecord>,
    pub packages: Collection<PackagesRecord>,
    pub teardowns: Collection<TeardownRecord>,
}

impl Db {
    /// Ensures the collections and their indexes (idempotent).
    pub async fn open(store: Arc<dyn DocumentStore>) -> Result<Self, StoreError> {
        let by_group_zone = |name: &str| {
            CollectionSpec::new(name).index("by_group", ["group"]).index("by_zone", ["zone"])
        };
        store.ensure_collection(&CollectionSpec::new(ZONES)).await?;
        for name in [PLACEMENTS, WORKERS, PACKAGES, TEARDOWNS] {
            store.ensure_collection(&by_group_zone(name)).await?;
        }
        Ok(Self {
            zones: Collection::new(store.clone(), ZONES),
            placements: Collection::new(store.clone(), PLACEMENTS),
            workers: Collection::new(store.clone(), WORKERS),
            packages: Collection::new(store.clone(), PACKAGES),
            teardowns: Collection::new(store, TEARDOWNS),
        })
    }
}

/// `group` and/or `zone` equality; empty strings do not filter.
pub fn group_zone(group: &str, zone: &str) -> Filter {
    let mut filter = Filter::new();
    if !group.is_empty() {
        filter = filter.eq("group", group);
    }
    if !zone.is_empty() {
        filter = filter.eq("zone", zone);
    }
    filter
}

/// The one page type of every service (`ramen_service::paging`).
pub use ramen_service::paging::Page;

/// The request's page, or an error naming the token.
pub fn page(request: Option<&PageRequest>) -> Result<Page> {
    Page::of(request).map_err(|bad| Error::invalid("page.page_token", bad.to_string()))
}
