//! Versioned single-document writes. Optimistic concurrency: a conditional write filters on
//! `{_id, _v: expected}`; when it matches nothing, one read tells "missing" from "moved on".

use mongodb::Collection;
use mongodb::bson::{Document, doc};
use mongodb::error::{ErrorKind, InsertManyError};
use serde_json::Value;

use super::convert::{EXPIRES, ID, VERSION, i64_version, to_document, version_of};
use super::error::{DUPLICATE_KEY, map, map_write};
use crate::{Expiry, StoreError};

type Coll = Collection<Document>;

/// How many times `put` re-reads after losing a race before giving up as `Unavailable`.
const PUT_ATTEMPTS: usize = 32;

async fn current_version(coll: &Coll, id: &str) -> Result<Option<u64>, StoreError> {
    let projection = doc! { VERSION: 1 };
    let found = coll.find_one(doc! { ID: id }).projection(projection).await.map_err(map)?;
    found.as_ref().map(version_of).transpose()
}

pub(super) async fn insert(
    coll: &Coll,
    id: &str,
    doc: &Value,
    expiry: Option<&Expiry>,
) -> Result<u64, StoreError> {
    coll.insert_one(to_document(id, 1, doc, expiry))
        .await
        .map_err(|e| map_write(e, coll.name(), id))?;
    Ok(1)
}

/// Before a write to a collection with a retention: a document at `id` that has expired is
/// gone for reads, so it goes for writes too (the TTL monitor may not have got to it yet).
pub(super) async fn clear_expired(
    coll: &Coll,
    id: &str,
    expiry: Option<&Expiry>,
    now_ms: i64,
) -> Result<(), StoreError> {
    let Some(expiry) = expiry else { return Ok(()) };
    let cutoff = mongodb::bson::DateTime::from_millis(expiry.cutoff_ms(now_ms));
    coll.delete_one(doc! { ID: id, EXPIRES: { "$lte": cutoff } }).await.map_err(map)?;
    Ok(())
}

pub(super) async fn update(
    coll: &Coll,
    id: &str,
    expected: u64,
    doc: &Value,
    expiry: Option<&Expiry>,
) -> Result<u64, StoreError> {
    let next = expected
        .checked_add(1)
        .ok_or_else(|| StoreError::conflict(coll.name(), id, expected, 0))?;
    let filter = doc! { ID: id, VERSION: i64_version(expected) };
    let result = coll
        .replace_one(filter, to_document(id, next, doc, expiry))
        .await
        .map_err(|e| map_write(e, coll.name(), id))?;
    if result.matched_count == 1 {
        return Ok(next);
    }
    match current_version(coll, id).await? {
        None => Err(StoreError::not_found(coll.name(), id)),
        Some(actual) => Err(StoreError::conflict(coll.name(), id, expected, actual)),
    }
}

/// An upsert that still bumps the version: insert when missing, else a conditional replace
/// of the version just read; a concurrent writer makes it read again.
pub(super) async fn put(
    coll: &Coll,
    id: &str,
    doc: &Value,
    expiry: Option<&Expiry>,
) -> Result<u64, StoreError> {
    for _ in 0..PUT_ATTEMPTS {
        let attempt = match current_version(coll, id).await? {
            None => insert(coll, id, doc, expiry).await,
            Some(version) => update(coll, id, version, doc, expiry).await,
        };
        match attempt {
            Err(StoreError::AlreadyExists { .. })
            | Err(StoreError::VersionConflict { .. })
            | Err(StoreError::NotFound { .. }) => continue,
            other => return other,
        }
    }
    Err(StoreError::Unavailable(format!(
        "put {}/{id}: lost the race to concurrent writers {PUT_ATTEMPTS} times",
        coll.name()
    )))
}

/// Many documents whatever their versions: one unordered `insert_many` (one round trip for a
/// batch of call records, where `put` would take two per document); the ones already there
/// (a batch delivered again, or an expired document the TTL monitor has not removed yet) are
/// then written over one by one, as `put` does.
pub(super) async fn put_many(
    coll: &Coll,
    docs: &[(String, Value)],
    expiry: Option<&Expiry>,
    now_ms: i64,
) -> Result<(), StoreError> {
    let documents = docs.iter().map(|(id, doc)| to_document(id, 1, doc, expiry));
    let existing: Vec<usize> = match coll.insert_many(documents).ordered(false).await {
        Ok(_) => return Ok(()),
        Err(err) => match err.kind.as_ref() {
            ErrorKind::InsertMany(InsertManyError {
                write_errors: Some(errors),
                write_concern_error: None,
                ..
            }) if errors.iter().all(|e| e.code == DUPLICATE_KEY) => {
                errors.iter().map(|e| e.index).collect()
            }
            _ => return Err(map(err)),
        },
    };
    for index in existing {
        let (id, doc) = &docs[index];
        clear_expired(coll, id, expiry, now_ms).await?;
        put(coll, id, doc, expiry).await?;
    }
    Ok(())
}

pub(super) async fn delete(
    coll: &Coll,
    id: &str,
    expected: Option<u64>,
) -> Result<bool, StoreError> {
    let mut filter = doc! { ID: id };
    if let Some(expected) = expected {
        filter.insert(VERSION, i64_version(expected));
    }
    let result = coll.delete_one(filter).await.map_err(map)?;
    if result.deleted_count == 1 {
        return Ok(true);
    }
    match (expected, current_version(coll, id).await?) {
        (Some(expected), Some(actual)) => {
            Err(StoreError::conflict(coll.name(), id, expected, actual))
        }
        _ => Ok(false),
    }
}
