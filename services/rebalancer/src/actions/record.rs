//! Rebalance actions as stored (`rebalancer_actions`): what was asked, the load measured, the
//! weights computed, and how applying them went.

use std::sync::Arc;

use ramen_store::{Collection, CollectionSpec, DocumentStore, Filter, Query, StoreError};
use serde::{Deserialize, Serialize};

use crate::model::Provider;

pub const COLLECTION: &str = "rebalancer_actions";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionState {
    /// The balancer is reconciling; retried in the background until the deadline.
    Pending,
    Applied,
    Failed,
    Expired,
}

/// One target: the load that was measured for it and the weight it was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRecord {
    pub target: String,
    /// The zone whose cell measured it.
    pub zone: String,
    pub weight: u32,
    pub live: bool,
    pub in_flight: u32,
    pub cap: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub group: String,
    pub zone: String,
    pub provider: Provider,
    pub region: String,
    pub state: ActionState,
    pub note: String,
    pub targets: Vec<TargetRecord>,
    /// User id or `scheduler`.
    pub actor: String,
    pub request_id: String,
    pub attempts: u32,
    pub created_ms: i64,
    /// Also the owner's heartbeat while pending.
    pub updated_ms: i64,
    pub deadline_ms: i64,
    /// Replica retrying it.
    pub owner: String,
    /// What the balancer asked to follow (a GCP operation name).
    #[serde(default)]
    pub ticket: Option<String>,
}

impl ActionRecord {
    pub fn weights(&self) -> Vec<(String, u32)> {
        self.targets.iter().map(|t| (t.target.clone(), t.weight)).collect()
    }

    pub fn is_final(&self) -> bool {
        self.state != ActionState::Pending
    }
}

#[derive(Clone)]
pub struct ActionStore {
    actions: Collection<ActionRecord>,
}

impl ActionStore {
    pub async fn open(store: Arc<dyn DocumentStore>) -> Result<Self, StoreError> {
        let spec = CollectionSpec::new(COLLECTION)
            .index("by_created", ["created_ms"])
            .index("by_placement", ["group", "zone", "created_ms"])
            .index("by_state", ["state"]);
        store.ensure_collection(&spec).await?;
        Ok(Self { actions: Collection::new(store, COLLECTION) })
    }

    pub async fn insert(&self, id: &str, record: &ActionRecord) -> Result<(), StoreError> {
        self.actions.insert(id, record).await.map(|_| ())
    }

    pub async fn get(&self, id: &str) -> Result<Option<ActionRecord>, StoreError> {
        Ok(self.actions.get(id).await?.map(|v| v.value))
    }

    /// Read-modify-write; `change` answers whether to write at all.
    pub async fn modify<R: Send>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut ActionRecord) -> R + Send,
    ) -> Result<(ActionRecord, R), StoreError> {
        let (written, out) = self.actions.modify(id, |r| Ok::<_, StoreError>(change(r))).await?;
        Ok((written.value, out))
    }

    /// Newest first; `group` / `zone` empty = any. One more than `limit` tells of a next page.
    pub async fn list(
        &self,
        group: &str,
        zone: &str,
        skip: u64,
        limit: u64,
    ) -> Result<Vec<(String, ActionRecord)>, StoreError> {
        let mut filter = Filter::new();
        if !group.is_empty() {
            filter = filter.eq("group", group);
        }
        if !zone.is_empty() {
            filter = filter.eq("zone", zone);
        }
        let query = Query::new().filter(filter).sort_desc("created_ms").skip(skip).limit(limit);
        Ok(self.actions.find(&query).await?.into_iter().map(|v| (v.id, v.value)).collect())
    }

    pub async fn pending(&self) -> Result<Vec<(String, ActionRecord)>, StoreError> {
        let query = Query::new().eq("state", "pending");
        Ok(self.actions.find(&query).await?.into_iter().map(|v| (v.id, v.value)).collect())
    }
}
