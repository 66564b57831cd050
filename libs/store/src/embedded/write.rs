//! Writes of the embedded store. Each call is one redb write transaction holding the document
//! and its unique-index entries, so a write is all-or-nothing and durable once it returns.

use redb::{Database, ReadableTable, WriteTransaction};
use serde_json::Value;

use super::eval;
use super::schema::reindex;
use super::tables::{self, DocTable};
use crate::model::now_ms;
use crate::{Filter, StoreError};

/// What a write expects to find: it picks the new version from the current one (`None` when
/// the document does not exist) or refuses.
type Decide<'a> = &'a dyn Fn(Option<u64>) -> Result<u64, StoreError>;

fn write_doc(
    txn: &WriteTransaction,
    coll: &str,
    id: &str,
    doc: &Value,
    decide: Decide<'_>,
) -> Result<u64, StoreError> {
    let meta = tables::load_meta(txn, coll)?;
    let name = tables::doc_table_name(coll);
    let mut docs = txn.open_table(DocTable::new(&name))?;
    let mut old = docs.get(id)?.map(|raw| tables::decode(id, raw.value())).transpose()?;
    // An expired document is gone for every read: a write finds nothing there either.
    if old
        .as_ref()
        .is_some_and(|(_, d)| meta.expiry.as_ref().is_some_and(|e| e.expired(d, now_ms())))
    {
        old = None;
    }
    let version = decide(old.as_ref().map(|(v, _)| *v))?;
    reindex(txn, coll, &meta.unique, id, old.as_ref().map(|(_, d)| d), Some(doc))?;
    docs.insert(id, tables::encode(version, doc)?.as_slice())?;
    Ok(version)
}

fn in_txn<T>(
    db: &Database,
    body: impl FnOnce(&WriteTransaction) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let txn = db.begin_write()?;
    let out = body(&txn)?;
    txn.commit()?;
    Ok(out)
}

pub(super) fn insert(db: &Database, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
    in_txn(db, |txn| {
        write_doc(txn, coll, id, doc, &|current| match current {
            None => Ok(1),
            Some(_) => Err(StoreError::already_exists(coll, id)),
        })
    })
}

pub(super) fn update(
    db: &Database,
    coll: &str,
    id: &str,
    expected: u64,
    doc: &Value,
) -> Result<u64, StoreError> {
    in_txn(db, |txn| {
        write_doc(txn, coll, id, doc, &|current| match current {
            None => Err(StoreError::not_found(coll, id)),
            Some(actual) if actual != expected => {
                Err(StoreError::conflict(coll, id, expected, actual))
            }
            Some(actual) => Ok(actual + 1),
        })
    })
}

pub(super) fn put_many(
    db: &Database,
    coll: &str,
    docs: &[(String, Value)],
) -> Result<(), StoreError> {
    in_txn(db, |txn| {
        for (id, doc) in docs {
            write_doc(txn, coll, id, doc, &|current| Ok(current.map_or(1, |v| v + 1)))?;
        }
        Ok(())
    })
}

pub(super) fn put(db: &Database, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
    in_txn(db, |txn| write_doc(txn, coll, id, doc, &|current| Ok(current.map_or(1, |v| v + 1))))
}

pub(super) fn delete(
    db: &Database,
    coll: &str,
    id: &str,
    expected: Option<u64>,
) -> Result<bool, StoreError> {
    in_txn(db, |txn| {
        let meta = tables::load_meta(txn, coll)?;
        let name = tables::doc_table_name(coll);
        let mut docs = txn.open_table(DocTable::new(&name))?;
        let Some((actual, old)) =
            docs.get(id)?.map(|raw| tables::decode(id, raw.value())).transpose()?
        else {
            return Ok(false);
        };
        if meta.expiry.as_ref().is_some_and(|e| e.expired(&old, now_ms())) {
            docs.remove(id)?;
            return Ok(false);
        }
        if let Some(expected) = expected.filter(|e| *e != actual) {
            return Err(StoreError::conflict(coll, id, expected, actual));
        }
        reindex(txn, coll, &meta.unique, id, Some(&old), None)?;
        docs.remove(id)?;
        Ok(true)
    })
}

pub(super) fn delete_many(db: &Database, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
    in_txn(db, |txn| {
        let meta = tables::load_meta(txn, coll)?;
        let name = tables::doc_table_name(coll);
        let mut docs = txn.open_table(DocTable::new(&name))?;
        let mut doomed = Vec::new();
        let mut expired = Vec::new();
        let now = now_ms();
        for entry in docs.iter()? {
            let (id, raw) = entry?;
            let id = id.value().to_owned();
            let (_, doc) = tables::decode(&id, raw.value())?;
            if meta.expiry.as_ref().is_some_and(|e| e.expired(&doc, now)) {
                // Gone already for every read: removed, not counted.
                expired.push(id);
            } else if eval::matches(filter, &Value::String(id.clone()), &doc) {
                doomed.push((id, doc));
            }
        }
        for (id, doc) in &doomed {
            reindex(txn, coll, &meta.unique, id, Some(doc), None)?;
            docs.remove(id.as_str())?;
        }
        for id in &expired {
            docs.remove(id.as_str())?;
        }
        Ok(doomed.len() as u64)
    })
}

/// Deletes the collection's expired documents (none without a retention); how many.
pub(super) fn purge_expired(db: &Database, coll: &str) -> Result<u64, StoreError> {
    // Most collections have no retention: a read transaction says so without a write (a
    // commit is a disk sync).
    if tables::read_expiry(&redb::ReadableDatabase::begin_read(db)?, coll)?.is_none() {
        return Ok(0);
    }
    in_txn(db, |txn| {
        let meta = tables::load_meta(txn, coll)?;
        let Some(expiry) = meta.expiry else { return Ok(0) };
        let name = tables::doc_table_name(coll);
        let mut docs = txn.open_table(DocTable::new(&name))?;
        let now = now_ms();
        let mut expired = Vec::new();
        for entry in docs.iter()? {
            let (id, raw) = entry?;
            let id = id.value().to_owned();
            let (_, doc) = tables::decode(&id, raw.value())?;
            if expiry.expired(&doc, now) {
                expired.push(id);
            }
        }
        for id in &expired {
            docs.remove(id.as_str())?;
        }
        Ok(expired.len() as u64)
    })
}
