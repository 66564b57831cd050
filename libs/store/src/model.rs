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
}

impl CollectionSpec {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), unique: Vec::new(), indexes: Vec::new() }
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
