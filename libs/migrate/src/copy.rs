use futures::{StreamExt, TryStreamExt, stream};
use ramen_blob::BlobStore;
use ramen_store::{CollectionSpec, DocumentStore, Query};

use crate::{MigrateError, Progress, Tally};

/// Copies every object whose bytes differ in the target (or are missing there). Returns the
/// tally; `progress` hears about every hundredth object and the last.
pub(crate) async fn blobs(
    source: &dyn BlobStore,
    target: &dyn BlobStore,
    dry_run: bool,
    concurrency: usize,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Tally, MigrateError> {
    let keys = source
        .list("")
        .await
        .map_err(|source| MigrateError::SourceBlob { key: String::new(), source })?;
    let total = keys.len() as u64;
    let mut tally = Tally::default();
    let mut copies = stream::iter(keys)
        .map(|key| async move { copy_blob(source, target, &key, dry_run).await })
        .buffer_unordered(concurrency);
    while let Some(written) = copies.try_next().await? {
        tally.add(written);
        if tally.total % 100 == 0 || tally.total == total {
            progress(Progress::Blobs { done: tally.total, total });
        }
    }
    Ok(tally)
}

/// `Some(bytes)` when the object was (or in a dry run would be) written.
async fn copy_blob(
    source: &dyn BlobStore,
    target: &dyn BlobStore,
    key: &str,
    dry_run: bool,
) -> Result<Option<u64>, MigrateError> {
    let body = source
        .get(key)
        .await
        .map_err(|source| MigrateError::SourceBlob { key: key.to_owned(), source })?;
    // Listed a moment ago: only a concurrent writer removes it, and there is none.
    let Some(body) = body else { return Ok(None) };
    let existing = target
        .get(key)
        .await
        .map_err(|source| MigrateError::TargetBlob { key: key.to_owned(), source })?;
    if existing.as_ref() == Some(&body) {
        return Ok(None);
    }
    let bytes = body.len() as u64;
    if !dry_run {
        target
            .put(key, body)
            .await
            .map_err(|source| MigrateError::TargetBlob { key: key.to_owned(), source })?;
    }
    Ok(Some(bytes))
}

/// Copies every document of `coll` whose body differs in the target. Versions are not
/// copied: the target numbers its own, and nothing compares versions across stores.
pub(crate) async fn collection(
    source: &dyn DocumentStore,
    target: &dyn DocumentStore,
    coll: &str,
    dry_run: bool,
    concurrency: usize,
) -> Result<Tally, MigrateError> {
    let docs = source
        .find(coll, &Query::default())
        .await
        .map_err(|source| MigrateError::source_store(format!("collection {coll}"), source))?;
    if !dry_run {
        // The owning service adds its indexes when it starts; this makes an empty collection
        // exist on the target too.
        target.ensure_collection(&CollectionSpec::new(coll)).await.map_err(|source| {
            MigrateError::TargetStore { what: format!("collection {coll}"), source }
        })?;
    }
    let mut tally = Tally::default();
    let mut copies = stream::iter(docs)
        .map(|stored| async move {
            let existing = target
                .get(coll, &stored.id)
                .await
                .map_err(|source| MigrateError::target_write(coll, &stored.id, source))?;
            if existing.is_some_and(|e| e.doc == stored.doc) {
                return Ok(None);
            }
            if !dry_run {
                target
                    .put(coll, &stored.id, &stored.doc)
                    .await
                    .map_err(|source| MigrateError::target_write(coll, &stored.id, source))?;
            }
            Ok::<_, MigrateError>(Some(0))
        })
        .buffer_unordered(concurrency);
    while let Some(written) = copies.try_next().await? {
        tally.add(written);
    }
    Ok(tally)
}
