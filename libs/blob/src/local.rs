//! A directory on local disk. Keys map onto paths segment by segment (validated first, so no
//! path leaves the root); a write lands in a temp file in the target directory and is renamed
//! over the key, so a reader never sees half an object and a crash leaves at most a temp file.

mod files;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;

use crate::{BlobError, BlobStore, validate_delete_prefix, validate_key, validate_prefix};
use files::{is_absent, key_path, list_keys, remove_key, write_atomic};

#[derive(Clone, Debug)]
pub struct LocalDirStore {
    root: PathBuf,
}

impl LocalDirStore {
    /// Uses `root` (created if missing) as the store.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| BlobError::io(&root, e))?;
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs filesystem work off the async threads.
    async fn blocking<T, F>(&self, op: &'static str, work: F) -> Result<T, BlobError>
    where
        T: Send + 'static,
        F: FnOnce(&Path) -> Result<T, BlobError> + Send + 'static,
    {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || work(&root))
            .await
            .map_err(|e| BlobError::Backend { op, message: format!("blocking task failed: {e}") })?
    }
}

#[async_trait]
impl BlobStore for LocalDirStore {
    async fn put(&self, key: &str, body: Bytes) -> Result<(), BlobError> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking("put", move |root| write_atomic(&key_path(root, &key), &body)).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, BlobError> {
        validate_key(key)?;
        let path = key_path(&self.root, key);
        self.blocking("get", move |_| match std::fs::read(&path) {
            Ok(body) => Ok(Some(Bytes::from(body))),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(BlobError::io(path, e)),
        })
        .await
    }

    async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        validate_key(key)?;
        let path = key_path(&self.root, key);
        self.blocking("exists", move |_| match std::fs::symlink_metadata(&path) {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if is_absent(&e) => Ok(false),
            Err(e) => Err(BlobError::io(path, e)),
        })
        .await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        validate_prefix(prefix)?;
        let prefix = prefix.to_owned();
        self.blocking("list", move |root| list_keys(root, &prefix)).await
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        validate_key(key)?;
        let key = key.to_owned();
        self.blocking("delete", move |root| remove_key(root, &key).map(drop)).await
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError> {
        validate_delete_prefix(prefix)?;
        let prefix = prefix.to_owned();
        self.blocking("delete_prefix", move |root| {
            let mut removed = 0;
            for key in list_keys(root, &prefix)? {
                if remove_key(root, &key)? {
                    removed += 1;
                }
            }
            Ok(removed)
        })
        .await
    }

    async fn ping(&self) -> Result<(), BlobError> {
        let root = self.root.clone();
        self.blocking("ping", move |_| match std::fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => Ok(()),
            Ok(_) => Err(BlobError::io(&root, ErrorKind::NotADirectory.into())),
            Err(e) => Err(BlobError::io(&root, e)),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn leftover_temp_files_and_symlinks_are_not_objects() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"outside the root").unwrap();
        let store = LocalDirStore::open(dir.path()).unwrap();
        store.put("groups/g/real", Bytes::from_static(b"1")).await.unwrap();
        // What a crash between write and rename leaves behind.
        std::fs::write(dir.path().join("groups/g/.ramen-tmp.1.1"), b"partial").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("groups/link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("groups/f"))
            .unwrap();

        assert_eq!(store.list("").await.unwrap(), ["groups/g/real"]);
        assert!(!store.exists("groups/f").await.unwrap(), "a symlink is not an object");
        assert_eq!(store.delete_prefix("groups/").await.unwrap(), 1);
        assert!(outside.path().join("secret").exists(), "nothing outside the root was touched");
    }

    #[tokio::test]
    async fn delete_prunes_emptied_directories_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalDirStore::open(dir.path()).unwrap();
        store.put("groups/a/x/1", Bytes::from_static(b"1")).await.unwrap();
        store.put("groups/b/2", Bytes::from_static(b"2")).await.unwrap();
        store.delete("groups/a/x/1").await.unwrap();
        assert!(!dir.path().join("groups/a").exists());
        assert!(dir.path().join("groups/b").is_dir());
        assert!(dir.path().is_dir(), "the root survives");
    }
}
