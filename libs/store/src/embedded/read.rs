//! Reads of the embedded store: point lookups by id, and scans that filter, sort and page in
//! memory (local mode's collections are small; the MongoDB adapter uses real indexes).

use redb::{Database, ReadableDatabase, ReadableTable, TableHandle};
use serde_json::Value;

use super::eval;
use super::tables::{self, DocTable};
use crate::model::now_ms;
use crate::{Filter, Query, StoreError, Stored};

pub(super) fn get(db: &Database, coll: &str, id: &str) -> Result<Option<Stored>, StoreError> {
    let txn = db.begin_read()?;
    let name = tables::doc_table_name(coll);
    let Some(docs) = tables::missing_is_empty(txn.open_table(DocTable::new(&name)))? else {
        return Ok(None);
    };
    let Some(raw) = docs.get(id)? else { return Ok(None) };
    let (version, doc) = tables::decode(id, raw.value())?;
    if tables::read_expiry(&txn, coll)?.is_some_and(|e| e.expired(&doc, now_ms())) {
        return Ok(None);
    }
    Ok(Some(Stored { id: id.to_owned(), version, doc }))
}

/// Every document matching `filter`, in id order.
fn scan(db: &Database, coll: &str, filter: &Filter) -> Result<Vec<Stored>, StoreError> {
    let txn = db.begin_read()?;
    let name = tables::doc_table_name(coll);
    let Some(docs) = tables::missing_is_empty(txn.open_table(DocTable::new(&name)))? else {
        return Ok(Vec::new());
    };
    let expiry = tables::read_expiry(&txn, coll)?;
    let now = now_ms();
    let mut out = Vec::new();
    for entry in docs.iter()? {
        let (id, raw) = entry?;
        let id = id.value();
        let (version, doc) = tables::decode(id, raw.value())?;
        if expiry.as_ref().is_some_and(|e| e.expired(&doc, now)) {
            continue;
        }
        if eval::matches(filter, &Value::String(id.to_owned()), &doc) {
            out.push(Stored { id: id.to_owned(), version, doc });
        }
    }
    Ok(out)
}

pub(super) fn find(db: &Database, coll: &str, query: &Query) -> Result<Vec<Stored>, StoreError> {
    let mut found = scan(db, coll, &query.filter)?;
    if !query.sort.is_empty() {
        // Ids are compared as JSON strings inside `order_by`; build them once.
        let mut keyed: Vec<(Value, Stored)> =
            found.into_iter().map(|s| (Value::String(s.id.clone()), s)).collect();
        keyed.sort_by(|a, b| eval::order_by(&query.sort, (&a.0, &a.1.doc), (&b.0, &b.1.doc)));
        found = keyed.into_iter().map(|(_, s)| s).collect();
    }
    let skip = usize::try_from(query.skip).unwrap_or(usize::MAX);
    let limit = query.limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    Ok(found.into_iter().skip(skip).take(limit).collect())
}

pub(super) fn count(db: &Database, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
    Ok(scan(db, coll, filter)?.len() as u64)
}

pub(super) fn collections(db: &Database) -> Result<Vec<String>, StoreError> {
    let txn = db.begin_read()?;
    let mut names: Vec<String> = txn
        .list_tables()?
        .filter_map(|t| t.name().strip_prefix(tables::DOC_PREFIX).map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}
