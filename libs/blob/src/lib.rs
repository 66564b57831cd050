//! The blob port: where group repo snapshots live (`groups/<group>/...`).
//!
//! [`BlobStore`] has two adapters: [`S3Store`] (AWS S3 or any S3-compatible server such as
//! MinIO or moto) for cloud mode, and [`LocalDirStore`] (a directory on local disk) for
//! `ramen up` and tests. Both validate keys with the same rules ([`validate_key`]) and pass the
//! same conformance suite (`tests/conformance.rs`).

mod error;
mod key;
mod local;
mod s3;
mod s3_error;

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

pub use error::BlobError;
pub use key::{MAX_KEY_BYTES, MAX_SEGMENT_BYTES, validate_key, validate_prefix};
pub use local::LocalDirStore;
pub use s3::{S3Settings, S3Store, StaticCredentials};

/// Object storage addressed by `/`-separated keys. Object-safe: services hold an
/// `Arc<dyn BlobStore>` chosen at startup by [`open`].
#[async_trait]
pub trait BlobStore: Send + Sync + 'static {
    /// Writes the whole object, replacing any previous content. Readers see either the old or
    /// the new content, never a partial write.
    async fn put(&self, key: &str, body: Bytes) -> Result<(), BlobError>;

    /// The object's content, or `None` when there is no object at `key`.
    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError>;

    async fn exists(&self, key: &str) -> Result<bool, BlobError>;

    /// Every key starting with `prefix` (a plain string prefix, as on S3: `groups/a` also
    /// matches `groups/ab/x`; end it with `/` to stay inside one "directory"), sorted, across
    /// all pages. The empty prefix lists everything.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError>;

    /// Removes the object; removing a missing object succeeds.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;

    /// Removes every object under `prefix` and returns how many were removed. The empty
    /// prefix is refused (it would wipe the whole store).
    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError>;

    /// Cheap reachability check for `/readyz`.
    async fn ping(&self) -> Result<(), BlobError>;
}

/// The blob store the configuration asks for: S3 when `s3.bucket` is set, otherwise a local
/// directory `<data_dir>/blobs`.
pub async fn open(config: &ramen_config::Config) -> Result<Arc<dyn BlobStore>, BlobError> {
    if config.s3.bucket.is_empty() {
        let store = LocalDirStore::open(config.data_dir.join("blobs"))?;
        return Ok(Arc::new(store));
    }
    let store = S3Store::connect(S3Settings::from_config(&config.s3)).await?;
    Ok(Arc::new(store))
}

/// Refuses the empty prefix for bulk deletion, shared by the adapters.
pub(crate) fn validate_delete_prefix(prefix: &str) -> Result<(), BlobError> {
    if prefix.is_empty() {
        return Err(BlobError::InvalidKey {
            key: String::new(),
            reason: "refusing to delete with an empty prefix (it would delete everything)",
        });
    }
    validate_prefix(prefix)
}
