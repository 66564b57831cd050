//! The collections the zone-manager owns, and paging over them.

use std::sync::Arc;

use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_service::paging::PageWindow;
use ramen_store::{Collection, CollectionSpec, DocumentStore, Filter, Query, StoreError};

use crate::error::{Error, Result};
use crate::model::{PackagesRecord, PlacementRecord, WorkerRecord, ZoneRecord};
use crate::teardown::TeardownRecord;

pub const ZONES: &str = "zone_zones";
pub const PLACEMENTS: &str = "zone_placements";
pub const WORKERS: &str = "zone_workers";
pub const PACKAGES: &str = "zone_packages";
pub const TEARDOWNS: &str = "zone_teardowns";

/// Page size when a request asks for none, and the most a request gets.
pub const DEFAULT_PAGE: u64 = 100;
pub const MAX_PAGE: u64 = 500;

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

/// An offset page: `page_token` is the offset of the first item.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    pub offset: u64,
    pub size: u64,
}

impl Page {
    /// Everything (internal sweeps over a group's placements).
    pub fn all() -> Self {
        Self { offset: 0, size: u64::from(u32::MAX) }
    }

    pub fn from_request(request: Option<&PageRequest>) -> Result<Self> {
        let window = PageWindow::of(request, DEFAULT_PAGE, MAX_PAGE)
            .map_err(|bad| Error::invalid("page.page_token", bad.to_string()))?;
        Ok(Self { offset: window.offset, size: window.size })
    }

    /// Asks for one more than the page so the answer knows whether another page follows.
    pub fn query(&self, query: Query) -> Query {
        query.skip(self.offset).limit(self.size + 1)
    }

    /// Trims the look-ahead item and says where the next page starts.
    pub fn finish<T>(&self, mut items: Vec<T>, total: u64) -> (Vec<T>, PageInfo) {
        let more = items.len() as u64 > self.size;
        items.truncate(self.size as usize);
        let next_page_token =
            if more { (self.offset + self.size).to_string() } else { String::new() };
        (items, PageInfo { next_page_token, total })
    }

    /// Pages an in-memory list.
    pub fn slice<T>(&self, items: Vec<T>) -> (Vec<T>, PageInfo) {
        let total = items.len() as u64;
        let window: Vec<T> =
            items.into_iter().skip(self.offset as usize).take(self.size as usize + 1).collect();
        self.finish(window, total)
    }
}
