//! The document-store port: services keep their collections behind [`DocumentStore`], held as
//! `Arc<dyn DocumentStore>`. Two adapters: [`MongoStore`] (cloud mode) and [`EmbeddedStore`]
//! (local mode and tests: one redb file on local disk). Both refuse the same inputs and
//! answer queries alike; `tests/conformance.rs` runs one suite against each.
//!
//! Services usually go through the typed [`Collection`], whose `modify` does a retried
//! read-modify-write under optimistic concurrency.

mod embedded;
mod error;
mod model;
mod mongo;
mod port;
mod query;
mod typed;
mod validate;

use std::path::PathBuf;
use std::sync::Arc;

pub use embedded::{EmbeddedStore, FILE_NAME as EMBEDDED_FILE_NAME};
pub use error::StoreError;
pub use model::{CollectionSpec, Expiry, IndexSpec, Stored};
pub use mongo::MongoStore;
pub use port::DocumentStore;
pub use query::{Condition, Filter, Op, Order, Query};
pub use typed::{Collection, MODIFY_ATTEMPTS, Versioned};
pub use validate::{MAX_COLLECTION_LEN, MAX_DOCUMENT_BYTES, MAX_ID_LEN};

/// Which adapter to open.
#[derive(Clone)]
pub enum StoreConfig {
    /// The embedded store in this directory (created if missing).
    Embedded { dir: PathBuf },
    /// MongoDB at `uri`, all collections in database `db`.
    Mongo { uri: String, db: String },
}

impl StoreConfig {
    /// MongoDB when `mongo_uri` is set (non-blank), else the embedded store in `dir`.
    pub fn select(mongo_uri: &str, mongo_db: &str, dir: impl Into<PathBuf>) -> Self {
        if mongo_uri.trim().is_empty() {
            Self::Embedded { dir: dir.into() }
        } else {
            Self::Mongo { uri: mongo_uri.trim().to_owned(), db: mongo_db.to_owned() }
        }
    }
}

/// The URI may carry a password: never print it.
impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embedded { dir } => f.debug_struct("Embedded").field("dir", dir).finish(),
            Self::Mongo { db, .. } => {
                f.debug_struct("Mongo").field("uri", &"<redacted>").field("db", db).finish()
            }
        }
    }
}

/// Opens the configured store.
pub async fn open(config: &StoreConfig) -> Result<Arc<dyn DocumentStore>, StoreError> {
    match config {
        StoreConfig::Embedded { dir } => Ok(Arc::new(EmbeddedStore::open(dir).await?)),
        StoreConfig::Mongo { uri, db } => Ok(Arc::new(MongoStore::connect(uri, db).await?)),
    }
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
