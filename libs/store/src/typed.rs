//! A typed view of one collection for services: values in and out as their own structs, with
//! the version carried alongside so updates stay optimistic.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{DocumentStore, Filter, Query, StoreError, Stored};

/// How many times `modify` re-reads and re-applies after a version conflict.
pub const MODIFY_ATTEMPTS: u32 = 64;

/// A value with the id and version it was read at.
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned<T> {
    pub id: String,
    pub version: u64,
    pub value: T,
}

/// The collection `name` of `store`, holding `T`s (each serializing to a JSON object).
pub struct Collection<T> {
    store: Arc<dyn DocumentStore>,
    name: String,
    _values: PhantomData<fn() -> T>,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Self { store: Arc::clone(&self.store), name: self.name.clone(), _values: PhantomData }
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection").field("name", &self.name).finish()
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync> Collection<T> {
    pub fn new(store: Arc<dyn DocumentStore>, name: impl Into<String>) -> Self {
        Self { store, name: name.into(), _values: PhantomData }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn store(&self) -> &Arc<dyn DocumentStore> {
        &self.store
    }

    fn encode(&self, value: &T) -> Result<Value, StoreError> {
        serde_json::to_value(value).map_err(|e| StoreError::InvalidDocument(e.to_string()))
    }

    fn decode(&self, stored: Stored) -> Result<Versioned<T>, StoreError> {
        let value = serde_json::from_value(stored.doc).map_err(|e| StoreError::Decode {
            collection: self.name.clone(),
            id: stored.id.clone(),
            reason: e.to_string(),
        })?;
        Ok(Versioned { id: stored.id, version: stored.version, value })
    }

    /// Stores a new value; returns its version (1).
    pub async fn insert(&self, id: &str, value: &T) -> Result<u64, StoreError> {
        self.store.insert(&self.name, id, &self.encode(value)?).await
    }

    pub async fn get(&self, id: &str) -> Result<Option<Versioned<T>>, StoreError> {
        self.store.get(&self.name, id).await?.map(|s| self.decode(s)).transpose()
    }

    /// Writes `current.value` if the stored version is still `current.version`; returns it at
    /// the new version. `VersionConflict` if someone wrote in between.
    pub async fn update(&self, current: Versioned<T>) -> Result<Versioned<T>, StoreError> {
        let doc = self.encode(&current.value)?;
        let version = self.store.update(&self.name, &current.id, current.version, &doc).await?;
        Ok(Versioned { version, ..current })
    }

    /// Writes unconditionally; returns the new version.
    pub async fn put(&self, id: &str, value: &T) -> Result<u64, StoreError> {
        self.store.put(&self.name, id, &self.encode(value)?).await
    }

    /// [`crate::DocumentStore::put_many`]: `(id, value)` pairs, as one write where the store can.
    pub async fn put_many(&self, documents: &[(String, T)]) -> Result<(), StoreError> {
        let mut encoded = Vec::with_capacity(documents.len());
        for (id, value) in documents {
            encoded.push((id.clone(), self.encode(value)?));
        }
        self.store.put_many(&self.name, &encoded).await
    }

    pub async fn delete(
        &self,
        id: &str,
        expected_version: Option<u64>,
    ) -> Result<bool, StoreError> {
        self.store.delete(&self.name, id, expected_version).await
    }

    pub async fn find(&self, query: &Query) -> Result<Vec<Versioned<T>>, StoreError> {
        let found = self.store.find(&self.name, query).await?;
        found.into_iter().map(|s| self.decode(s)).collect()
    }

    /// The first match by id, for lookups through a unique field.
    pub async fn find_one(&self, filter: Filter) -> Result<Option<Versioned<T>>, StoreError> {
        Ok(self.find(&Query::new().filter(filter).limit(1)).await?.pop())
    }

    pub async fn count(&self, filter: &Filter) -> Result<u64, StoreError> {
        self.store.count(&self.name, filter).await
    }

    pub async fn delete_many(&self, filter: &Filter) -> Result<u64, StoreError> {
        self.store.delete_many(&self.name, filter).await
    }

    /// Read-modify-write with retries: reads the value, applies `change`, writes it back at
    /// the version read, and on a `VersionConflict` starts over (up to `MODIFY_ATTEMPTS`
    /// times, with a short random pause so contenders spread out). `change` may run more
    /// than once and must only touch the value. Its error aborts without writing;
    /// store errors reach the caller through `E: From<StoreError>` (`NotFound` if missing).
    pub async fn modify<R, E, F>(&self, id: &str, mut change: F) -> Result<(Versioned<T>, R), E>
    where
        F: FnMut(&mut T) -> Result<R, E> + Send,
        E: From<StoreError>,
        R: Send,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(mut current) = self.get(id).await? else {
                return Err(StoreError::not_found(&self.name, id).into());
            };
            let out = change(&mut current.value)?;
            match self.update(current).await {
                Ok(written) => return Ok((written, out)),
                Err(StoreError::VersionConflict { .. }) if attempt < MODIFY_ATTEMPTS => {
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A random pause up to 0.5 ms × 2^attempt, capped at 20 ms.
fn backoff(attempt: u32) -> Duration {
    let ceiling = (500u64 << attempt.min(6)).min(20_000);
    Duration::from_micros(rand::thread_rng().gen_range(0..=ceiling))
}
