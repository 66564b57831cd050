/// What a shared-state call can fail with. [`StateError::Unavailable`] is the one to expect in
/// production: the backend did not answer within the call's bound, and the caller should
/// degrade (see [`crate::Degrading`]) rather than wait.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The backend did not answer in time, is disconnected or is recovering. Retryable.
    #[error("shared state unavailable during {op}: {message}")]
    Unavailable { op: &'static str, message: String },

    /// The call itself is wrong (empty key, zero TTL, a cost above the bucket's capacity).
    #[error("invalid shared-state call: {0}")]
    InvalidArgument(String),

    /// The settings cannot work (a malformed URL, a Sentinel address without a port).
    #[error("invalid shared-state configuration: {0}")]
    Config(String),

    /// The backend answered with an error that retrying will not fix (refused credentials, a
    /// script error).
    #[error("shared state backend error during {op}: {message}")]
    Backend { op: &'static str, message: String },
}

impl StateError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, StateError::Unavailable { .. })
    }
}
