use std::path::{Path, PathBuf};
use std::sync::Arc;

use ramen_blob::BlobStore;
use ramen_config::Config;
use ramen_store::{DocumentStore, StoreConfig};

use crate::{MigrateError, Source};

/// Where the data goes: the store and blob store a service started with this configuration
/// would open (the same choice as the platform's: MongoDB when `RAMEN_MONGO_URI` is set,
/// S3 when `RAMEN_S3_BUCKET` is, else the embedded adapters in the target's data dir).
pub struct Target {
    pub(crate) store: Arc<dyn DocumentStore>,
    pub(crate) blob: Arc<dyn BlobStore>,
    description: String,
}

impl Target {
    pub async fn open(config: &Config, source: &Source) -> Result<Self, MigrateError> {
        let store_config = StoreConfig::select(
            config.mongo.uri.expose(),
            &config.mongo.db,
            config.data_dir.join("store"),
        );
        let mut parts = Vec::new();
        match &store_config {
            StoreConfig::Embedded { dir } => {
                refuse_source(source.data_dir(), &config.data_dir)?;
                parts.push(format!("the embedded store in {}", dir.display()));
            }
            StoreConfig::Mongo { db, .. } => parts.push(format!("MongoDB database `{db}`")),
        }
        if config.s3.bucket.is_empty() {
            refuse_source(source.data_dir(), &config.data_dir)?;
            parts.push(format!("the blob directory {}", config.data_dir.join("blobs").display()));
        } else {
            parts.push(format!("S3 bucket `{}`", config.s3.bucket));
        }
        let store = ramen_store::open(&store_config)
            .await
            .map_err(|source| MigrateError::TargetStore { what: "opening it".into(), source })?;
        store
            .ping()
            .await
            .map_err(|source| MigrateError::TargetStore { what: "reaching it".into(), source })?;
        let blob = ramen_blob::open(config)
            .await
            .map_err(|source| MigrateError::TargetBlob { key: String::new(), source })?;
        blob.ping()
            .await
            .map_err(|source| MigrateError::TargetBlob { key: String::new(), source })?;
        Ok(Self { store, blob, description: parts.join(" and ") })
    }

    /// Targets given directly (tests, or callers with stores of their own).
    pub fn new(
        store: Arc<dyn DocumentStore>,
        blob: Arc<dyn BlobStore>,
        description: impl Into<String>,
    ) -> Self {
        Self { store, blob, description: description.into() }
    }

    pub fn store(&self) -> &Arc<dyn DocumentStore> {
        &self.store
    }

    pub fn blob(&self) -> &Arc<dyn BlobStore> {
        &self.blob
    }

    /// "MongoDB database `ramen` and S3 bucket `b`", for the command's output.
    pub fn description(&self) -> &str {
        &self.description
    }
}

fn refuse_source(source: &Path, target: &Path) -> Result<(), MigrateError> {
    let canonical = |p: &Path| -> PathBuf { p.canonicalize().unwrap_or_else(|_| p.to_owned()) };
    if canonical(source) == canonical(target) {
        return Err(MigrateError::TargetIsSource { data_dir: source.to_owned() });
    }
    Ok(())
}
