use async_trait::async_trait;
use serde_json::Value;

use crate::{CollectionSpec, Filter, Query, StoreError, Stored};

/// The document store every service keeps its collections in. Documents are JSON objects
/// addressed by (collection, id) and versioned: each write bumps the version, and
/// `update` / `delete` take the version the caller read so a lost update is a
/// `VersionConflict` instead of silent overwriting.
///
/// Object-safe: services hold an `Arc<dyn DocumentStore>` picked at start-up by
/// [`crate::open`]. Writing to a collection that was never ensured works (it has no unique
/// indexes); services call `ensure_collection` at start-up for the ones they own.
#[async_trait]
pub trait DocumentStore: Send + Sync {
    /// Creates the collection and any missing indexes; idempotent. Fails with
    /// `IndexConflict` when existing documents violate a new unique index, or an index of the
    /// same name exists over other fields.
    async fn ensure_collection(&self, spec: &CollectionSpec) -> Result<(), StoreError>;

    /// Stores a new document at version 1. `AlreadyExists` if the id is taken,
    /// `UniqueViolation` naming the index if a unique index is.
    async fn insert(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError>;

    async fn get(&self, coll: &str, id: &str) -> Result<Option<Stored>, StoreError>;

    /// Replaces the document if it is still at `expected_version`; returns the new version.
    /// `NotFound`, `VersionConflict` (nothing written) or `UniqueViolation`.
    async fn update(
        &self,
        coll: &str,
        id: &str,
        expected_version: u64,
        doc: &Value,
    ) -> Result<u64, StoreError>;

    /// Writes the document whatever its current version (1 if new); returns the new version.
    async fn put(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError>;

    /// Writes each document whatever its current version, as one write where the backend can
    /// (the embedded store: one transaction). For many small documents written together,
    /// such as a batch of call records; a batch written again writes the same documents over
    /// themselves.
    async fn put_many(&self, coll: &str, docs: &[(String, Value)]) -> Result<(), StoreError> {
        for (id, doc) in docs {
            self.put(coll, id, doc).await?;
        }
        Ok(())
    }

    /// Removes the document; `false` if there was none. With `expected_version`, a document
    /// at another version is kept and the call fails with `VersionConflict`.
    async fn delete(
        &self,
        coll: &str,
        id: &str,
        expected_version: Option<u64>,
    ) -> Result<bool, StoreError>;

    /// The matching documents, sorted by the query's sort keys then by id.
    async fn find(&self, coll: &str, query: &Query) -> Result<Vec<Stored>, StoreError>;

    async fn count(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError>;

    /// Removes every matching document; returns how many.
    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError>;

    /// Names of the collections that exist (ensured or written to), sorted.
    async fn collections(&self) -> Result<Vec<String>, StoreError>;

    /// Cheap liveness check for readiness probes.
    async fn ping(&self) -> Result<(), StoreError>;
}
