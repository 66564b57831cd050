//! MongoDB driver errors as `StoreError`s: duplicate keys become the port's id / unique-index
//! answers, connectivity and primary changes become the retryable `Unavailable`.

use mongodb::error::{Error, ErrorKind, WriteFailure};

use crate::StoreError;

/// E11000 duplicate key.
pub(super) const DUPLICATE_KEY: i32 = 11000;
/// The collection exists already (create_collection is idempotent for us).
pub(super) const NAMESPACE_EXISTS: i32 = 48;
/// Server codes that mean "not now": shutdown, failover, timeouts, network.
const TRANSIENT_CODES: &[i32] = &[6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436];
/// The index of the id field.
const ID_INDEX: &str = "_id_";

/// The server's error code and message, when the server answered.
pub(super) fn server_error(err: &Error) -> Option<(i32, &str)> {
    match err.kind.as_ref() {
        ErrorKind::Command(c) => Some((c.code, c.message.as_str())),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some((w.code, w.message.as_str())),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some((w.code, w.message.as_str())),
        _ => None,
    }
}

/// The index named in an E11000 message:
/// `E11000 duplicate key error collection: db.users index: by_email dup key: { … }`.
pub(super) fn duplicate_index(message: &str) -> Option<&str> {
    let rest = &message[message.find("index: ")? + "index: ".len()..];
    rest.split_whitespace().next()
}

/// Maps any driver error; callers handle duplicate keys first where they mean something.
pub(super) fn map(err: Error) -> StoreError {
    let transient = matches!(
        err.kind.as_ref(),
        ErrorKind::Io(_)
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::DnsResolve { .. }
            | ErrorKind::Shutdown
    ) || ["RetryableWriteError", "TransientTransactionError", "RetryableError"]
        .iter()
        .any(|label| err.contains_label(label))
        || server_error(&err).is_some_and(|(code, _)| TRANSIENT_CODES.contains(&code));
    if transient {
        return StoreError::Unavailable(err.to_string());
    }
    match server_error(&err) {
        // BSONObjectTooLarge and friends: the document, not the server, is at fault.
        Some((10334 | 17419 | 17420, message)) => StoreError::InvalidDocument(message.to_owned()),
        _ => StoreError::Backend(err.to_string()),
    }
}

/// For single-document writes: a duplicate `_id` is `AlreadyExists`, a duplicate in another
/// unique index is `UniqueViolation` naming it.
pub(super) fn map_write(err: Error, coll: &str, id: &str) -> StoreError {
    match server_error(&err) {
        Some((DUPLICATE_KEY, message)) => match duplicate_index(message) {
            Some(ID_INDEX) => StoreError::already_exists(coll, id),
            Some(index) => StoreError::unique(coll, index),
            None => StoreError::unique(coll, "<unnamed>"),
        },
        _ => map(err),
    }
}

/// For index creation: existing duplicates or a clashing definition are `IndexConflict`.
pub(super) fn map_index(err: Error, coll: &str, index: &str) -> StoreError {
    match server_error(&err) {
        // 11000 duplicate key in existing data; 85 IndexOptionsConflict; 86
        // IndexKeySpecsConflict; 67 CannotCreateIndex.
        Some((DUPLICATE_KEY | 85 | 86 | 67, message)) => {
            StoreError::index_conflict(coll, index, message.to_owned())
        }
        _ => map(err),
    }
}

#[cfg(test)]
mod tests {
    use super::duplicate_index;

    #[test]
    fn finds_the_index_in_a_duplicate_key_message() {
        let msg = "E11000 duplicate key error collection: ramen.auth_users index: by_email \
                   dup key: { email: \"a@b\" }";
        assert_eq!(duplicate_index(msg), Some("by_email"));
        let id = "E11000 duplicate key error collection: t.c index: _id_ dup key: { _id: \"x\" }";
        assert_eq!(duplicate_index(id), Some("_id_"));
        assert_eq!(duplicate_index("E11000 duplicate key error"), None);
    }
}
