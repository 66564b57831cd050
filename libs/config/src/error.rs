/// Exit code for a configuration the process refuses to start with (`EX_CONFIG` from sysexits).
pub const EXIT_CONFIG: i32 = 78;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// One key has a value that cannot be used.
    #[error("invalid config `{key}`: {reason}")]
    Invalid { key: String, reason: String },
    /// Cloud mode without the variables it cannot run without; each one is named.
    #[error("cloud mode (RAMEN_MODE=cloud) cannot start without: {}", .0.join("; "))]
    MissingForCloud(Vec<String>),
    #[error("cannot prepare the data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, reason: impl Into<String>) -> Self {
        Self::Invalid { key: key.to_owned(), reason: reason.into() }
    }

    pub(crate) fn from_figment(err: figment::Error) -> Self {
        let key = if err.path.is_empty() { "<root>".to_owned() } else { err.path.join(".") };
        Self::Invalid { key, reason: err.kind.to_string() }
    }
}
