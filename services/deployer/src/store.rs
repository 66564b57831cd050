//! The deployer's collections and their indexes.

use std::sync::Arc;

use ramen_store::{Collection, CollectionSpec, DocumentStore, StoreError};

use crate::jobs::model::JobRecord;
use crate::model::{EnvironmentRecord, GroupRecord, SettingsRecord};

pub const GROUPS: &str = "deployer_groups";
pub const ENVIRONMENTS: &str = "deployer_environments";
pub const JOBS: &str = "deployer_deploy_jobs";
pub const SETTINGS: &str = "deployer_settings";

/// Names of the unique indexes callers branch on.
pub const ACTIVE_JOB_INDEX: &str = "one_live_deploy_per_environment";
pub const IDEMPOTENCY_INDEX: &str = "idempotency_key";

#[derive(Clone)]
pub struct Db {
    pub groups: Collection<GroupRecord>,
    pub environments: Collection<EnvironmentRecord>,
    pub jobs: Collection<JobRecord>,
    pub settings: Collection<SettingsRecord>,
}

impl Db {
    pub async fn open(store: Arc<dyn DocumentStore>) -> Result<Self, StoreError> {
        let specs = [
            CollectionSpec::new(GROUPS),
            CollectionSpec::new(ENVIRONMENTS).index("by_group", ["group"]),
            CollectionSpec::new(JOBS)
                .unique(ACTIVE_JOB_INDEX, ["active"])
                .unique(IDEMPOTENCY_INDEX, ["idempotency_key"])
                .index("by_environment", ["group", "environment", "created_at_ms"])
                .index("by_state", ["state"]),
            CollectionSpec::new(SETTINGS),
        ];
        for spec in &specs {
            store.ensure_collection(spec).await?;
        }
        Ok(Self {
            groups: Collection::new(store.clone(), GROUPS),
            environments: Collection::new(store.clone(), ENVIRONMENTS),
            jobs: Collection::new(store.clone(), JOBS),
            settings: Collection::new(store, SETTINGS),
        })
    }
}
