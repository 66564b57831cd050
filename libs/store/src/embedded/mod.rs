//! The embedded adapter: one redb database file in a directory, durable on local disk. redb
//! is synchronous, so every call runs on tokio's blocking pool.

mod eval;
mod read;
mod schema;
mod tables;
mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use redb::Database;
use serde_json::Value;

use crate::validate::{check_collection, check_document, check_id};
use crate::{CollectionSpec, DocumentStore, Filter, Query, StoreError, Stored};

/// The database file inside the store directory.
pub const FILE_NAME: &str = "ramen-store.redb";

/// The embedded store. Cheap to clone; the file stays open (and locked against a second
/// opener) until the last clone is dropped.
#[derive(Clone)]
pub struct EmbeddedStore {
    file: Arc<StoreFile>,
    /// When each collection's expired documents were last purged (see `purge_if_due`).
    purged: Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

/// How often a written collection's expired documents are deleted at most.
const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore").field("path", &self.file.path).finish()
    }
}

/// The open database file. After an I/O error (a full disk, say) redb refuses every later
/// call until the file is reopened, so the file is then closed and reopened on the next call:
/// once space is freed the store works again without a restart.
struct StoreFile {
    path: PathBuf,
    open: RwLock<Opened>,
}

/// The database, `None` after an I/O error until a reopen succeeds; `generation` counts the
/// opens, so a call failing on an earlier one cannot close the file a later call reopened.
struct Opened {
    db: Option<Database>,
    generation: u64,
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir`.
    pub async fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = dir.as_ref().to_owned();
        let path = dir.join(FILE_NAME);
        let file = path.clone();
        let db = tokio::task::spawn_blocking(move || -> Result<Database, StoreError> {
            std::fs::create_dir_all(&dir).map_err(|e| naming(&dir, e.into()))?;
            Database::create(&file).map_err(|e| naming(&file, e.into()))
        })
        .await
        .map_err(|e| StoreError::Backend(format!("opening the store panicked: {e}")))??;
        tracing::debug!(path = %path.display(), "embedded store open");
        Ok(Self { file: Arc::new(StoreFile::new(path, db)), purged: Arc::default() })
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Deletes a collection's expired documents now; how many.
    pub async fn purge_expired(&self, coll: &str) -> Result<u64, StoreError> {
        check_collection(coll)?;
        let coll = coll.to_owned();
        self.blocking(move |db| write::purge_expired(db, &coll)).await
    }

    /// After a write: the collection's expired documents go, at most once a minute. Reads
    /// never return them meanwhile, so a failed purge only delays reclaiming their space.
    async fn purge_if_due(&self, coll: &str) {
        let due = {
            let mut purged = self.purged.lock().unwrap_or_else(PoisonError::into_inner);
            let now = std::time::Instant::now();
            match purged.get(coll) {
                Some(last) if now.duration_since(*last) < PURGE_EVERY => false,
                _ => {
                    purged.insert(coll.to_owned(), now);
                    true
                }
            }
        };
        if due && let Err(err) = self.purge_expired(coll).await {
            tracing::warn!(collection = %coll, error = %err, "expired documents not purged");
        }
    }

    /// Runs `work` on the blocking pool with the database.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let file = Arc::clone(&self.file);
        tokio::task::spawn_blocking(move || file.run(work))
            .await
            .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }
}

impl StoreFile {
    fn new(path: PathBuf, db: Database) -> Self {
        Self { path, open: RwLock::new(Opened { db: Some(db), generation: 0 }) }
    }

    fn run<T>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut open = self.open.read().unwrap_or_else(PoisonError::into_inner);
        if open.db.is_none() {
            drop(open);
            self.reopen()?;
            open = self.open.read().unwrap_or_else(PoisonError::into_inner);
        }
        let (Some(db), generation) = (open.db.as_ref(), open.generation) else {
            return Err(StoreError::Unavailable(format!(
                "{} was closed by another call's I/O error; try again",
                self.path.display()
            )));
        };
        match work(db) {
            Err(err) if tables::poisons_the_file(&err) => {
                drop(open);
                self.close_after(generation, &err);
                Err(naming(&self.path, err))
            }
            other => other.map_err(|err| naming(&self.path, err)),
        }
    }

    /// Closes the file after an I/O error (unless it was reopened since); the next call
    /// reopens it.
    fn close_after(&self, generation: u64, err: &StoreError) {
        let mut open = self.open.write().unwrap_or_else(PoisonError::into_inner);
        if open.generation == generation && open.db.take().is_some() {
            tracing::error!(path = %self.path.display(), error = %err, "embedded store I/O error; the file is reopened on the next call");
        }
    }

    /// Opens the file again (redb repairs it if the failed write left it unclean).
    fn reopen(&self) -> Result<(), StoreError> {
        let mut open = self.open.write().unwrap_or_else(PoisonError::into_inner);
        if open.db.is_none() {
            let reopened = Database::create(&self.path).map_err(|e| {
                StoreError::Unavailable(format!(
                    "{} cannot be reopened after an I/O error: {}",
                    self.path.display(),
                    StoreError::from(e)
                ))
            })?;
            tracing::info!(path = %self.path.display(), "embedded store reopened");
            open.db = Some(reopened);
            open.generation += 1;
        }
        Ok(())
    }
}

/// An I/O error names the file, so "no space left on device" says which disk to look at.
fn naming(path: &Path, err: StoreError) -> StoreError {
    match err {
        StoreError::Io(e) => {
            StoreError::Io(std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        }
        other => other,
    }
}

fn owned(coll: &str, id: &str) -> Result<(String, String), StoreError> {
    check_collection(coll)?;
    check_id(id)?;
    Ok((coll.to_owned(), id.to_owned()))
}

fn owned_doc(coll: &str, id: &str, doc: &Value) -> Result<(String, String, Value), StoreError> {
    check_document(doc)?;
    let (coll, id) = owned(coll, id)?;
    Ok((coll, id, doc.clone()))
}

#[async_trait]
impl DocumentStore for EmbeddedStore {
    async fn ensure_collection(&self, spec: &CollectionSpec) -> Result<(), StoreError> {
        spec.validate()?;
        let owned = spec.clone();
        self.blocking(move |db| schema::ensure_collection(db, &owned)).await?;
        if spec.expiry.is_some() {
            self.purge_expired(&spec.name).await?;
        }
        Ok(())
    }

    async fn insert(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
        let (coll, id, doc) = owned_doc(coll, id, doc)?;
        let name = coll.clone();
        let version = self.blocking(move |db| write::insert(db, &coll, &id, &doc)).await?;
        self.purge_if_due(&name).await;
        Ok(version)
    }

    async fn put_many(&self, coll: &str, docs: &[(String, Value)]) -> Result<(), StoreError> {
        if docs.is_empty() {
            return Ok(());
        }
        let mut owned = Vec::with_capacity(docs.len());
        for (id, doc) in docs {
            let (_, id, doc) = owned_doc(coll, id, doc)?;
            owned.push((id, doc));
        }
        let name = coll.to_owned();
        let target = name.clone();
        self.blocking(move |db| write::put_many(db, &target, &owned)).await?;
        self.purge_if_due(&name).await;
        Ok(())
    }

    async fn get(&self, coll: &str, id: &str) -> Result<Option<Stored>, StoreError> {
        let (coll, id) = owned(coll, id)?;
        self.blocking(move |db| read::get(db, &coll, &id)).await
    }

    async fn update(
        &self,
        coll: &str,
        id: &str,
        expected: u64,
        doc: &Value,
    ) -> Result<u64, StoreError> {
        let (coll, id, doc) = owned_doc(coll, id, doc)?;
        self.blocking(move |db| write::update(db, &coll, &id, expected, &doc)).await
    }

    async fn put(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
        let (coll, id, doc) = owned_doc(coll, id, doc)?;
        let name = coll.clone();
        let version = self.blocking(move |db| write::put(db, &coll, &id, &doc)).await?;
        self.purge_if_due(&name).await;
        Ok(version)
    }

    async fn delete(
        &self,
        coll: &str,
        id: &str,
        expected: Option<u64>,
    ) -> Result<bool, StoreError> {
        let (coll, id) = owned(coll, id)?;
        self.blocking(move |db| write::delete(db, &coll, &id, expected)).await
    }

    async fn find(&self, coll: &str, query: &Query) -> Result<Vec<Stored>, StoreError> {
        check_collection(coll)?;
        query.validate()?;
        let (coll, query) = (coll.to_owned(), query.clone());
        self.blocking(move |db| read::find(db, &coll, &query)).await
    }

    async fn count(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
        check_collection(coll)?;
        filter.validate()?;
        let (coll, filter) = (coll.to_owned(), filter.clone());
        self.blocking(move |db| read::count(db, &coll, &filter)).await
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
        check_collection(coll)?;
        filter.validate()?;
        let (coll, filter) = (coll.to_owned(), filter.clone());
        self.blocking(move |db| write::delete_many(db, &coll, &filter)).await
    }

    async fn collections(&self) -> Result<Vec<String>, StoreError> {
        self.blocking(read::collections).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        // A read transaction proves the file is open and readable.
        self.blocking(|db| {
            redb::ReadableDatabase::begin_read(db)?;
            Ok(())
        })
        .await
    }
}
