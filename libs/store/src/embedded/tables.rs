//! How the embedded store lays collections out in redb tables:
//! - `doc:<collection>`: id → 8-byte big-endian version followed by the document's JSON;
//! - `uniq:<collection>:<index>`: canonical key of the indexed values → owning id;
//! - `meta`: collection → its ensured indexes (JSON).
//!
//! Collection and index names cannot hold `:` (see `validate`), so names never collide.

use redb::{ReadTransaction, ReadableTable, TableDefinition, TableError, WriteTransaction};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Expiry, IndexSpec, StoreError};

pub(super) const DOC_PREFIX: &str = "doc:";
pub(super) type DocTable<'a> = TableDefinition<'a, &'static str, &'static [u8]>;
pub(super) type UniqueTable<'a> = TableDefinition<'a, &'static [u8], &'static str>;
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

pub(super) fn doc_table_name(coll: &str) -> String {
    format!("{DOC_PREFIX}{coll}")
}

pub(super) fn unique_table_name(coll: &str, index: &str) -> String {
    format!("uniq:{coll}:{index}")
}

/// The indexes and retention ensured on one collection.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct CollectionMeta {
    pub unique: Vec<IndexSpec>,
    pub indexes: Vec<IndexSpec>,
    #[serde(default)]
    pub expiry: Option<Expiry>,
}

/// The collection's retention, read in a read transaction.
pub(super) fn read_expiry(txn: &ReadTransaction, coll: &str) -> Result<Option<Expiry>, StoreError> {
    let Some(table) = missing_is_empty(txn.open_table(META))? else { return Ok(None) };
    let Some(raw) = table.get(coll)? else { return Ok(None) };
    let meta: CollectionMeta = serde_json::from_slice(raw.value())
        .map_err(|e| StoreError::Corrupt(format!("index metadata of `{coll}`: {e}")))?;
    Ok(meta.expiry)
}

pub(super) fn load_meta(txn: &WriteTransaction, coll: &str) -> Result<CollectionMeta, StoreError> {
    let table = txn.open_table(META)?;
    let Some(raw) = table.get(coll)? else {
        return Ok(CollectionMeta::default());
    };
    serde_json::from_slice(raw.value())
        .map_err(|e| StoreError::Corrupt(format!("index metadata of `{coll}`: {e}")))
}

pub(super) fn save_meta(
    txn: &WriteTransaction,
    coll: &str,
    meta: &CollectionMeta,
) -> Result<(), StoreError> {
    let raw = serde_json::to_vec(meta).map_err(|e| StoreError::Backend(e.to_string()))?;
    txn.open_table(META)?.insert(coll, raw.as_slice())?;
    Ok(())
}

pub(super) fn encode(version: u64, doc: &Value) -> Result<Vec<u8>, StoreError> {
    let mut out = version.to_be_bytes().to_vec();
    serde_json::to_writer(&mut out, doc).map_err(|e| StoreError::InvalidDocument(e.to_string()))?;
    Ok(out)
}

pub(super) fn decode(id: &str, raw: &[u8]) -> Result<(u64, Value), StoreError> {
    let corrupt = |why: String| StoreError::Corrupt(format!("document `{id}`: {why}"));
    let (head, body) = raw.split_at_checked(8).ok_or_else(|| corrupt("record too short".into()))?;
    let version = u64::from_be_bytes(head.try_into().map_err(|_| corrupt("bad header".into()))?);
    let doc = serde_json::from_slice(body).map_err(|e| corrupt(e.to_string()))?;
    Ok((version, doc))
}

/// A missing table reads as an empty collection.
pub(super) fn missing_is_empty<T>(result: Result<T, TableError>) -> Result<Option<T>, StoreError> {
    match result {
        Ok(t) => Ok(Some(t)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What redb answers every call with after an I/O error, until the file is reopened.
const PREVIOUS_IO: &str =
    "an earlier I/O error closed the store's file; it is reopened on the next call";

/// Whether `err` leaves the database file unusable until it is reopened: any I/O error
/// (redb then refuses every call with `PreviousIo`), and that refusal itself.
pub(super) fn poisons_the_file(err: &StoreError) -> bool {
    match err {
        StoreError::Io(_) => true,
        StoreError::Unavailable(message) => message == PREVIOUS_IO,
        _ => false,
    }
}

fn from_redb(err: redb::Error) -> StoreError {
    use redb::Error as E;
    match err {
        E::DatabaseAlreadyOpen => StoreError::Unavailable(
            "the store's database file is already open (another ramen process, or another \
             store in this one, uses the same directory)"
                .into(),
        ),
        E::Io(e) => StoreError::Io(e),
        E::ValueTooLarge(len) => StoreError::InvalidDocument(format!("{len} bytes is too large")),
        E::Corrupted(_)
        | E::TableTypeMismatch { .. }
        | E::TypeDefinitionChanged { .. }
        | E::TableIsMultimap(_)
        | E::UpgradeRequired(_) => StoreError::Corrupt(err.to_string()),
        E::PreviousIo => StoreError::Unavailable(PREVIOUS_IO.into()),
        E::DatabaseClosed => StoreError::Unavailable(err.to_string()),
        other => StoreError::Backend(other.to_string()),
    }
}

macro_rules! from_redb_errors {
    ($($ty:ty),*) => {$(
        impl From<$ty> for StoreError {
            fn from(err: $ty) -> Self {
                from_redb(err.into())
            }
        }
    )*};
}

from_redb_errors!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);
