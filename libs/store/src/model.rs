use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StoreError;
use crate::validate::{check_field_path, check_index_name};

/// One stored document: its id, its version (1 on insert, +1 on every write) and its body
/// without the store's own `_id` / `_v` fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub id: String,
    pub version: u64,
    pub doc: Value,
}

/// A collection and the indexes it needs. `ensure_collection` only ever adds indexes: one
/// that is left out of a later spec stays in place.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionSpec {
    pub name: String,
    /// Enforced: no two documents share the values of these fields. A document that lacks
    /// any of an index's fields is not indexed (a partial index), so it never conflicts; an
    /// explicit `null` is indexed like any other value.
    #[serde(default)]
    pub unique: Vec<IndexSpec>,
    /// Lookup indexes: created in MongoDB, recorded but scanned in the embedded store.
    #[serde(default)]
    pub indexes: Vec<IndexSpec>,
    /// Documents expire a while after a time they hold (a retention).
    #[serde(default)]
    pub expiry: Option<Expiry>,
}

/// A collection's retention: a document whose `field` holds a time (Unix milliseconds) more
/// than `after_seconds` ago has expired. No read returns it from then on, whatever the adapter;
/// the adapter deletes it in the background (MongoDB: a TTL index; the embedded store: a purge
/// at most once a minute while the collection is written, and at `ensure_collection`). A
/// document without the field, or with something else than a number there, never expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expiry {
    pub field: String,
    pub after_seconds: u64,
}

impl Expiry {
    /// Whether `doc` has expired at `now_ms`.
    pub fn expired(&self, doc: &Value, now_ms: i64) -> bool {
        self.time_ms(doc).is_some_and(|at| at <= self.cutoff_ms(now_ms))
    }

    /// Documents whose time is at or before this have expired.
    pub fn cutoff_ms(&self, now_ms: i64) -> i64 {
        let after = i64::try_from(self.after_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        now_ms.saturating_sub(after)
    }

    /// The document's time, when it holds one.
    pub fn time_ms(&self, doc: &Value) -> Option<i64> {
        let mut at = doc;
        for part in self.field.split('.') {
            at = at.get(part)?;
        }
        at.as_i64().or_else(|| at.as_f64().map(|f| f as i64))
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl CollectionSpec {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), unique: Vec::new(), indexes: Vec::new(), expiry: None }
    }

    /// Documents expire `after` (whole seconds, at least one) past the Unix-milliseconds time
    /// in `field` (a dotted path). A collection with a retention has no unique indexes: an
    /// expired document would otherwise hold its values until it is deleted.
    pub fn expire_after(mut self, field: &str, after: std::time::Duration) -> Self {
        self.expiry = Some(Expiry { field: field.to_owned(), after_seconds: after.as_secs() });
        self
    }

    /// Adds a unique index over `fields` (dotted paths; several make a compound index).
    pub fn unique<S: Into<String>>(
        mut self,
        name: &str,
        fields: impl IntoIterator<Item = S>,
    ) -> Self {
        self.unique.push(IndexSpec::new(name, fields));
        self
    }

    /// Adds a non-unique lookup index over `fields`.
    pub fn index<S: Into<String>>(
        mut self,
        name: &str,
        fields: impl IntoIterator<Item = S>,
    ) -> Self {
        self.indexes.push(IndexSpec::new(name, fields));
        self
    }

    pub(crate) fn validate(&self) -> Result<(), StoreError> {
        crate::validate::check_collection(&self.name)?;
        if let Some(expiry) = &self.expiry {
            check_field_path(&expiry.field)?;
            let invalid = |reason: String| StoreError::InvalidName { what: "expiry", reason };
            if expiry.field == "_id" {
                return Err(invalid(format!("`{}`: the id holds no time", self.name)));
            }
            if expiry.after_seconds == 0 {
                return Err(invalid(format!("`{}`: a retention of at least a second", self.name)));
            }
            if !self.unique.is_empty() {
                return Err(invalid(format!(
                    "`{}`: a collection with a retention has no unique indexes",
                    self.name
                )));
            }
        }
        let all = self.unique.iter().chain(&self.indexes);
        let mut seen = std::collections::BTreeSet::new();
        for index in all {
            index.validate()?;
            if !seen.insert(index.name.as_str()) {
                return Err(StoreError::index_conflict(
                    &self.name,
                    &index.name,
                    "the spec names this index twice",
                ));
            }
        }
        Ok(())
    }
}

/// A named index over one or more dotted field paths (ascending).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSpec {
    pub name: String,
    pub fields: Vec<String>,
}

impl IndexSpec {
    pub fn new<S: Into<String>>(name: &str, fields: impl IntoIterator<Item = S>) -> Self {
        Self { name: name.to_owned(), fields: fields.into_iter().map(Into::into).collect() }
    }

    fn validate(&self) -> Result<(), StoreError> {
        check_index_name(&self.name)?;
        if self.fields.is_empty() {
            return Err(StoreError::InvalidName {
                what: "index",
                reason: format!("index `{}` has no fields", self.name),
            });
        }
        for field in &self.fields {
            check_field_path(field)?;
            if field == "_id" {
                return Err(StoreError::InvalidName {
                    what: "index",
                    reason: format!("index `{}`: the id is unique already", self.name),
                });
            }
        }
        Ok(())
    }
}
