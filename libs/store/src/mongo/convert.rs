//! JSON ⇄ BSON for documents, and the port's filters and sorts as MongoDB query documents.
//!
//! The conversion is written out rather than taken from `bson`'s `From<serde_json::Value>`,
//! which reads `{"$oid": …}`-style objects as extended JSON: a document body must come back
//! exactly as it went in. Integers are stored as int64, other numbers as double.

use mongodb::bson::{Bson, Document, doc};
use serde_json::{Map, Number, Value};

use crate::{Condition, Filter, IndexSpec, Op, Order, StoreError, Stored};

pub(super) const ID: &str = "_id";
pub(super) const VERSION: &str = "_v";
/// A collection with a retention: the document's time as a BSON date, which MongoDB's TTL
/// index needs (the body keeps its own number). Never returned.
pub(super) const EXPIRES: &str = "_expires";

pub(super) fn to_bson(value: &Value) -> Bson {
    match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Bson::Int64(i),
            // Validation refuses integers beyond i64, so this is a float.
            None => Bson::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(to_bson).collect()),
        Value::Object(map) => {
            Bson::Document(map.iter().map(|(k, v)| (k.clone(), to_bson(v))).collect())
        }
    }
}

fn to_json(value: Bson) -> Value {
    match value {
        Bson::Null | Bson::Undefined => Value::Null,
        Bson::Boolean(b) => Value::Bool(b),
        Bson::Int32(i) => Value::from(i),
        Bson::Int64(i) => Value::from(i),
        Bson::Double(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        Bson::String(s) => Value::String(s),
        Bson::Array(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Bson::Document(d) => Value::Object(d.into_iter().map(|(k, v)| (k, to_json(v))).collect()),
        // Only written by other tools; keep them readable rather than failing the read.
        other => other.into_relaxed_extjson(),
    }
}

pub(super) fn i64_version(version: u64) -> i64 {
    // Versions count writes from 1; no document reaches 2^63, so saturating is exact in practice.
    i64::try_from(version).unwrap_or(i64::MAX)
}

/// The stored form: `_id`, `_v`, the time a retention counts from, then the body's fields.
pub(super) fn to_document(
    id: &str,
    version: u64,
    doc: &Value,
    expiry: Option<&crate::Expiry>,
) -> Document {
    let mut out = doc! { ID: id, VERSION: i64_version(version) };
    if let Some(at) = expiry.and_then(|e| e.time_ms(doc)) {
        out.insert(EXPIRES, mongodb::bson::DateTime::from_millis(at));
    }
    if let Value::Object(map) = doc {
        out.extend(map.iter().map(|(k, v)| (k.clone(), to_bson(v))));
    }
    out
}

/// Documents a retention has not expired yet (the TTL monitor deletes the others within a
/// minute or so; reads must not see them meanwhile).
pub(super) fn live(expiry: &crate::Expiry, now_ms: i64) -> Document {
    let cutoff = mongodb::bson::DateTime::from_millis(expiry.cutoff_ms(now_ms));
    doc! { "$or": [ { EXPIRES: { "$exists": false } }, { EXPIRES: { "$gt": cutoff } } ] }
}

/// `filter` restricted to what `live` keeps.
pub(super) fn and_live(filter: Document, expiry: Option<&crate::Expiry>, now_ms: i64) -> Document {
    match expiry {
        None => filter,
        Some(e) if filter.is_empty() => live(e, now_ms),
        Some(e) => doc! { "$and": [ filter, live(e, now_ms) ] },
    }
}

pub(super) fn version_of(stored: &Document) -> Result<u64, StoreError> {
    let v = match stored.get(VERSION) {
        Some(Bson::Int64(v)) => Some(*v),
        Some(Bson::Int32(v)) => Some(i64::from(*v)),
        _ => None,
    };
    v.and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| StoreError::Corrupt(format!("document without a valid `{VERSION}`")))
}

pub(super) fn from_document(mut stored: Document) -> Result<Stored, StoreError> {
    let version = version_of(&stored)?;
    let id = match stored.remove(ID) {
        Some(Bson::String(id)) => id,
        other => {
            return Err(StoreError::Corrupt(format!("document with a non-string id {other:?}")));
        }
    };
    stored.remove(VERSION);
    stored.remove(EXPIRES);
    let doc: Map<String, Value> = stored.into_iter().map(|(k, v)| (k, to_json(v))).collect();
    Ok(Stored { id, version, doc: Value::Object(doc) })
}

/// `{$and: [{field: {$op: value}}, …]}`: each condition apart, since a field may appear twice.
pub(super) fn filter_doc(filter: &Filter) -> Document {
    if filter.conditions.is_empty() {
        return Document::new();
    }
    let parts: Vec<Bson> = filter.conditions.iter().map(|c| Bson::Document(condition(c))).collect();
    doc! { "$and": parts }
}

fn condition(cond: &Condition) -> Document {
    let (op, value) = match &cond.op {
        Op::Eq(v) => ("$eq", to_bson(v)),
        Op::Ne(v) => ("$ne", to_bson(v)),
        Op::In(vs) => ("$in", Bson::Array(vs.iter().map(to_bson).collect())),
        Op::Gt(v) => ("$gt", to_bson(v)),
        Op::Gte(v) => ("$gte", to_bson(v)),
        Op::Lt(v) => ("$lt", to_bson(v)),
        Op::Lte(v) => ("$lte", to_bson(v)),
        Op::Exists(b) => ("$exists", Bson::Boolean(*b)),
    };
    let mut inner = Document::new();
    inner.insert(op, value);
    let mut out = Document::new();
    out.insert(cond.field.clone(), inner);
    out
}

/// The sort keys, then `_id` ascending, so ties come back in the same order as the embedded
/// store's.
pub(super) fn sort_doc(sort: &[(String, Order)]) -> Document {
    let mut out = Document::new();
    for (field, order) in sort {
        out.insert(field.clone(), if *order == Order::Asc { 1 } else { -1 });
    }
    if !out.contains_key(ID) {
        out.insert(ID, 1);
    }
    out
}

/// Index keys (ascending), and for unique indexes the partial filter that leaves out
/// documents lacking a field, matching the embedded store.
pub(super) fn index_keys(index: &IndexSpec) -> (Document, Document) {
    let mut keys = Document::new();
    let mut present = Document::new();
    for field in &index.fields {
        keys.insert(field.clone(), 1);
        present.insert(field.clone(), doc! { "$exists": true });
    }
    (keys, present)
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
