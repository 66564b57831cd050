use std::path::{Path, PathBuf};
use std::sync::Arc;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_store::{DocumentStore, EMBEDDED_FILE_NAME, EmbeddedStore, StoreError};

use crate::MigrateError;

/// A `ramen up` data directory, opened for reading: its embedded store (`store/`) and its
/// blob directory (`blobs/`).
pub struct Source {
    pub(crate) store: Arc<dyn DocumentStore>,
    pub(crate) blob: Arc<dyn BlobStore>,
    data_dir: PathBuf,
}

impl Source {
    /// Opens the data dir's store. Refuses a directory without one (rather than creating an
    /// empty store and migrating nothing) and a store another process holds open.
    pub async fn open(data_dir: &Path) -> Result<Self, MigrateError> {
        let store_dir = data_dir.join("store");
        let file = store_dir.join(EMBEDDED_FILE_NAME);
        if !file.is_file() {
            return Err(MigrateError::NotADataDir { data_dir: data_dir.to_owned(), store: file });
        }
        let store = match EmbeddedStore::open(&store_dir).await {
            Ok(store) => store,
            Err(StoreError::Unavailable(_)) => {
                return Err(MigrateError::SourceInUse { data_dir: data_dir.to_owned() });
            }
            Err(source) => return Err(MigrateError::source_store("the store", source)),
        };
        let blob = LocalDirStore::open(data_dir.join("blobs"))
            .map_err(|source| MigrateError::SourceBlob { key: "blobs/".into(), source })?;
        Ok(Self { store: Arc::new(store), blob: Arc::new(blob), data_dir: data_dir.to_owned() })
    }

    pub fn store(&self) -> &Arc<dyn DocumentStore> {
        &self.store
    }

    pub fn blob(&self) -> &Arc<dyn BlobStore> {
        &self.blob
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where `ramen up` keeps the secrets key it generated when `RAMEN_SECRETS_KEY` was unset.
    pub fn key_file(&self) -> Option<PathBuf> {
        Self::key_file_in(&self.data_dir)
    }

    /// [`key_file`](Self::key_file) of a data dir not opened (yet).
    pub fn key_file_in(data_dir: &Path) -> Option<PathBuf> {
        let file = data_dir.join("keys").join("secrets.key");
        file.is_file().then_some(file)
    }

    pub(crate) async fn collections(&self) -> Result<Vec<String>, MigrateError> {
        self.store
            .collections()
            .await
            .map_err(|source| MigrateError::source_store("the list of collections", source))
    }
}
