use std::time::Duration;

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation, UpdateErrorKind};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use crate::client::Bus;
use crate::error::{BusError, Result};

/// A KV bucket. `ttl` is the bucket's max age: every revision, and so every key not written
/// again within it, disappears after `ttl` (`None` = kept forever). Leases rely on it.
#[derive(Clone, Debug)]
pub struct KvSpec {
    pub bucket: String,
    pub ttl: Option<Duration>,
    /// Revisions kept per key (1..=64).
    pub history: i64,
    pub replicas: usize,
}

impl Default for KvSpec {
    fn default() -> Self {
        Self { bucket: String::new(), ttl: None, history: 1, replicas: 1 }
    }
}

/// The current value of a key and the revision to pass to a checked write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: Bytes,
    pub revision: u64,
}

/// One change seen by [`Kv::watch`]. `value` is `None` for a delete or purge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvChange {
    pub key: String,
    pub value: Option<Bytes>,
    pub revision: u64,
}

#[derive(Clone)]
pub struct Kv {
    store: kv::Store,
    bucket: String,
}

impl Bus {
    /// Creates the bucket, or updates it to `spec`.
    pub async fn kv(&self, spec: &KvSpec) -> Result<Kv> {
        let config = kv::Config {
            bucket: spec.bucket.clone(),
            history: spec.history.max(1),
            max_age: spec.ttl.unwrap_or_default(),
            num_replicas: spec.replicas.max(1),
            ..kv::Config::default()
        };
        let store = self.jetstream().create_or_update_key_value(config).await.map_err(|err| {
            BusError::from_text("create kv bucket", format!("bucket `{}`: {err}", spec.bucket))
        })?;
        Ok(Kv { store, bucket: spec.bucket.clone() })
    }
}

impl Kv {
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The live value of `key`; `None` when absent, deleted or expired.
    pub async fn get(&self, key: &str) -> Result<Option<Entry>> {
        let entry = self.store.entry(key).await.map_err(|err| BusError::nats("kv get", err))?;
        Ok(entry
            .filter(|e| e.operation == Operation::Put)
            .map(|e| Entry { value: e.value, revision: e.revision }))
    }

    /// Writes `key` only if it has no live value. Fails with [`BusError::AlreadyExists`].
    pub async fn create(&self, key: &str, value: Bytes) -> Result<u64> {
        self.store.create(key, value).await.map_err(|err| match err.kind() {
            CreateErrorKind::AlreadyExists => BusError::AlreadyExists { key: key.to_owned() },
            CreateErrorKind::InvalidKey => invalid_key(key),
            _ => BusError::nats("kv create", err),
        })
    }

    /// Writes `key` only if its latest revision is `expected_revision`. Fails with
    /// [`BusError::WrongRevision`] when someone else wrote (or it expired) in between.
    pub async fn update(&self, key: &str, value: Bytes, expected_revision: u64) -> Result<u64> {
        self.store.update(key, value, expected_revision).await.map_err(|err| match err.kind() {
            UpdateErrorKind::WrongLastRevision => BusError::WrongRevision { key: key.to_owned() },
            UpdateErrorKind::InvalidKey => invalid_key(key),
            _ => BusError::nats("kv update", err),
        })
    }

    /// Unconditional write.
    pub async fn put(&self, key: &str, value: Bytes) -> Result<u64> {
        self.store.put(key, value).await.map_err(|err| BusError::nats("kv put", err))
    }

    /// Deletes `key`, only at `expected_revision` when given.
    pub async fn delete(&self, key: &str, expected_revision: Option<u64>) -> Result<()> {
        self.store.delete_expect_revision(key, expected_revision).await.map_err(|err| {
            match err.kind() {
                UpdateErrorKind::WrongLastRevision => {
                    BusError::WrongRevision { key: key.to_owned() }
                }
                UpdateErrorKind::InvalidKey => invalid_key(key),
                _ => BusError::nats("kv delete", err),
            }
        })
    }

    /// Every live key.
    pub async fn keys(&self) -> Result<Vec<String>> {
        let keys = self.store.keys().await.map_err(|err| BusError::nats("kv keys", err))?;
        keys.try_collect().await.map_err(|err| BusError::nats("kv keys", err))
    }

    /// Changes to `key`, or to every key under a pattern such as `jobs.>`, from now on.
    pub async fn watch(
        &self,
        key_or_pattern: &str,
    ) -> Result<BoxStream<'static, Result<KvChange>>> {
        let watch = self
            .store
            .watch(key_or_pattern)
            .await
            .map_err(|err| BusError::nats("kv watch", err))?;
        Ok(watch
            .map(|item| {
                let entry = item.map_err(|err| BusError::nats("kv watch", err))?;
                let value = (entry.operation == Operation::Put).then_some(entry.value);
                Ok(KvChange { key: entry.key, value, revision: entry.revision })
            })
            .boxed())
    }
}

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kv").field("bucket", &self.bucket).finish()
    }
}

fn invalid_key(key: &str) -> BusError {
    BusError::Invalid {
        what: "kv key",
        reason: format!("`{key}` (empty, or starts/ends with `.`)"),
    }
}
