/// What a store call can fail with. Callers branch on the variant: conflicts and unique
/// violations are answers about the data, `Unavailable` is the one to retry later.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A collection name, document id, index name or field path the store refuses.
    #[error("invalid {what}: {reason}")]
    InvalidName { what: &'static str, reason: String },
    /// The document cannot be stored (not an object, reserved or `$` keys, too large, …).
    #[error("invalid document: {0}")]
    InvalidDocument(String),
    /// The filter, sort or paging cannot be run.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    #[error("{collection}/{id} not found")]
    NotFound { collection: String, id: String },
    #[error("{collection}/{id} already exists")]
    AlreadyExists { collection: String, id: String },
    /// The document changed since it was read: re-read, re-apply, retry.
    #[error("{collection}/{id} is at version {actual}, not the expected {expected}")]
    VersionConflict { collection: String, id: String, expected: u64, actual: u64 },
    /// Another document already holds these values of a unique index.
    #[error(
        "{collection}: unique index `{index}` already holds another document with these values"
    )]
    UniqueViolation { collection: String, index: String },
    /// `ensure_collection` could not create an index: the existing documents violate it, or an
    /// index of the same name exists with other fields.
    #[error("{collection}: cannot create index `{index}`: {reason}")]
    IndexConflict { collection: String, index: String, reason: String },
    /// A stored document does not deserialize into the type the caller asked for.
    #[error("{collection}/{id} does not match the expected type: {reason}")]
    Decode { collection: String, id: String, reason: String },
    /// The backend cannot be reached now (network, server selection, file locked): retryable.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data is unreadable; retrying will not help.
    #[error("store data corrupt: {0}")]
    Corrupt(String),
    #[error("store I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Any other backend failure, terminal.
    #[error("store backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// Whether the same operation may succeed if tried again: after a delay for
    /// `Unavailable` and `Io` (a full or read-only disk is the operator's to mend, and the
    /// embedded store reopens its file after one, so the same call then succeeds), after
    /// re-reading the document for `VersionConflict`. On a JetStream consumer that is
    /// nak-with-delay rather than term; on the REST API, 503.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Io(_) | Self::VersionConflict { .. })
    }

    pub(crate) fn not_found(collection: &str, id: &str) -> Self {
        Self::NotFound { collection: collection.to_owned(), id: id.to_owned() }
    }

    pub(crate) fn already_exists(collection: &str, id: &str) -> Self {
        Self::AlreadyExists { collection: collection.to_owned(), id: id.to_owned() }
    }

    pub(crate) fn conflict(collection: &str, id: &str, expected: u64, actual: u64) -> Self {
        Self::VersionConflict {
            collection: collection.to_owned(),
            id: id.to_owned(),
            expected,
            actual,
        }
    }

    pub(crate) fn unique(collection: &str, index: &str) -> Self {
        Self::UniqueViolation { collection: collection.to_owned(), index: index.to_owned() }
    }

    pub(crate) fn index_conflict(collection: &str, index: &str, reason: impl Into<String>) -> Self {
        Self::IndexConflict {
            collection: collection.to_owned(),
            index: index.to_owned(),
            reason: reason.into(),
        }
    }
}
