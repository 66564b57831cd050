//! Unique indexes of the embedded store: each is a table from the canonical key of the
//! indexed values to the owning id, written in the same transaction as the document.

use redb::{Database, ReadableTable, WriteTransaction};
use serde_json::Value;

use super::eval::unique_key;
use super::tables::{self, CollectionMeta, DocTable, UniqueTable};
use crate::{CollectionSpec, IndexSpec, StoreError};

/// Moves `id`'s entries in every unique index from `old` to `new` (either may be absent),
/// failing with `UniqueViolation` if another document holds a new key. The caller's
/// transaction is dropped on error, so a half-applied change never commits.
pub(super) fn reindex(
    txn: &WriteTransaction,
    coll: &str,
    specs: &[IndexSpec],
    id: &str,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<(), StoreError> {
    for spec in specs {
        let old_key = old.and_then(|d| unique_key(d, &spec.fields));
        let new_key = new.and_then(|d| unique_key(d, &spec.fields));
        if old_key == new_key {
            continue;
        }
        let name = tables::unique_table_name(coll, &spec.name);
        let mut table = txn.open_table(UniqueTable::new(&name))?;
        if let Some(key) = &new_key {
            let owner = table.get(key.as_slice())?.map(|g| g.value().to_owned());
            if owner.is_some_and(|owner| owner != id) {
                return Err(StoreError::unique(coll, &spec.name));
            }
        }
        if let Some(key) = &old_key {
            table.remove(key.as_slice())?;
        }
        if let Some(key) = &new_key {
            table.insert(key.as_slice(), id)?;
        }
    }
    Ok(())
}

pub(super) fn ensure_collection(db: &Database, spec: &CollectionSpec) -> Result<(), StoreError> {
    let coll = spec.name.as_str();
    let txn = db.begin_write()?;
    let mut meta = tables::load_meta(&txn, coll)?;
    // Creating the document table makes the collection exist even while it is empty.
    txn.open_table(DocTable::new(&tables::doc_table_name(coll)))?;
    for index in &spec.unique {
        if !known(coll, &meta, index)? {
            build_unique(&txn, coll, index)?;
            meta.unique.push(index.clone());
        }
    }
    for index in &spec.indexes {
        if !known(coll, &meta, index)? {
            meta.indexes.push(index.clone());
        }
    }
    if spec.expiry.is_some() {
        if !meta.unique.is_empty() {
            return Err(StoreError::index_conflict(
                coll,
                "expiry",
                "a collection with unique indexes cannot take a retention",
            ));
        }
        meta.expiry.clone_from(&spec.expiry);
    }
    tables::save_meta(&txn, coll, &meta)?;
    txn.commit()?;
    Ok(())
}

/// Whether the index already exists; an index of that name over other fields is a conflict.
fn known(coll: &str, meta: &CollectionMeta, index: &IndexSpec) -> Result<bool, StoreError> {
    match meta.unique.iter().chain(&meta.indexes).find(|i| i.name == index.name) {
        None => Ok(false),
        Some(existing) if existing.fields == index.fields => Ok(true),
        Some(existing) => Err(StoreError::index_conflict(
            coll,
            &index.name,
            format!("it exists over {:?}, not {:?}", existing.fields, index.fields),
        )),
    }
}

/// Indexes every existing document; two documents with the same key fail the whole call.
fn build_unique(txn: &WriteTransaction, coll: &str, index: &IndexSpec) -> Result<(), StoreError> {
    let name = tables::unique_table_name(coll, &index.name);
    // A table left by an index that is no longer in the metadata is stale: start afresh.
    txn.delete_table(UniqueTable::new(&name))?;
    let mut table = txn.open_table(UniqueTable::new(&name))?;
    let docs_name = tables::doc_table_name(coll);
    let docs = txn.open_table(DocTable::new(&docs_name))?;
    for entry in docs.iter()? {
        let (id, raw) = entry?;
        let (id, raw) = (id.value(), raw.value());
        let (_, doc) = tables::decode(id, raw)?;
        let Some(key) = unique_key(&doc, &index.fields) else { continue };
        let holder = table.get(key.as_slice())?.map(|g| g.value().to_owned());
        if let Some(holder) = holder {
            return Err(StoreError::index_conflict(
                coll,
                &index.name,
                format!("documents `{holder}` and `{id}` share the values of {:?}", index.fields),
            ));
        }
        table.insert(key.as_slice(), id)?;
    }
    Ok(())
}
