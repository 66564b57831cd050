use std::path::PathBuf;

/// What a blob call can fail with. Callers branch on the variant: retry [`Unavailable`]
/// (see [`BlobError::is_retryable`]), fix the input on [`InvalidKey`], alert on the rest.
///
/// [`Unavailable`]: BlobError::Unavailable
/// [`InvalidKey`]: BlobError::InvalidKey
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The key (or prefix) breaks the rules every adapter shares; nothing was sent anywhere.
    #[error("invalid blob key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },

    /// The container itself is missing (an S3 bucket that does not exist). A missing object is
    /// not an error: `get` answers `None` and `exists` answers `false`.
    #[error("{what} not found: {message}")]
    NotFound { what: String, message: String },

    /// Credentials were refused or lack the permission; retrying will not help.
    #[error("access denied during {op}: {message}")]
    Denied { op: &'static str, message: String },

    /// The backend could not be reached or answered with a transient failure (connection
    /// refused, timeout, throttling, 5xx). Safe to retry later.
    #[error("blob store unavailable during {op}: {message}")]
    Unavailable { op: &'static str, message: String },

    /// The backend rejected the call for a reason retrying will not fix.
    #[error("blob store error during {op}: {message}")]
    Backend { op: &'static str, message: String },

    /// The local directory adapter hit a filesystem error.
    #[error("blob store I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BlobError {
    /// True when the same call may succeed later without any change on the caller's side.
    pub fn is_retryable(&self) -> bool {
        match self {
            BlobError::Unavailable { .. } => true,
            BlobError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::TimedOut
            ),
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BlobError::Io { path: path.into(), source }
    }
}
