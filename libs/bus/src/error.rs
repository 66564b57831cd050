use std::fmt::{Debug, Display};

/// Every failure of the bus port. [`BusError::is_retryable`] says whether trying again later
/// can succeed (on JetStream: nak with a delay) or not (term / dead-letter, or fix config).
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The server cannot be reached right now; the client keeps reconnecting. Retryable.
    #[error("NATS unavailable during {op}: {message}")]
    Unavailable { op: &'static str, message: String },
    /// No answer within the deadline (server down, overloaded or restarting). Retryable.
    #[error("{op} timed out")]
    Timeout { op: &'static str },
    /// No stream captures the subject: a deployment or config mistake. Terminal.
    #[error("no JetStream stream captures subject `{subject}`")]
    NoStream { subject: String },
    /// The stream, consumer, bucket or message does not exist. Terminal.
    #[error("{what} not found")]
    NotFound { what: String },
    /// `create` of a KV key that exists. Callers branch on it (e.g. a lease held elsewhere).
    #[error("key `{key}` already exists")]
    AlreadyExists { key: String },
    /// A revision-checked KV write lost a race. Callers branch on it (re-read, or give up).
    #[error("key `{key}` is not at the expected revision")]
    WrongRevision { key: String },
    /// A name, key or value the server or this crate refuses. Terminal.
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    /// The payload could not be serialised. Terminal.
    #[error("encoding a `{schema}` payload: {source}")]
    Encode { schema: &'static str, source: serde_json::Error },
    /// A received payload is not the JSON of the expected type. Terminal (dead-letter it).
    #[error("decoding a message on `{subject}`: {reason}")]
    Decode { subject: String, reason: String },
    /// A received message carries another schema than the subject promises. Terminal.
    #[error("message on `{subject}` has schema {found:?}, expected `{expected}`")]
    SchemaMismatch { subject: String, expected: String, found: Option<String> },
    /// `dead_letter` on a stream that was created without a dead-letter stream. Terminal.
    #[error("stream `{stream}` has no dead-letter stream")]
    NoDeadLetterStream { stream: String },
    /// The server refused a JetStream API call (bad config, limits). Terminal.
    #[error("JetStream refused {op}: {message}")]
    Rejected { op: &'static str, message: String },
    /// No usable `nats-server` binary, and installing one failed. Terminal.
    #[error("nats-server: {0}")]
    NatsServer(String),
    /// A local I/O step (spawning, reading a pipe). Terminal for the caller.
    #[error("{op}: {source}")]
    Io { op: String, source: std::io::Error },
}

impl BusError {
    /// True when the same call can succeed later without anything being changed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Timeout { .. })
    }

    pub(crate) fn io(op: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { op: op.into(), source }
    }

    /// Maps any `async-nats` error by its text. The specific kinds callers branch on
    /// (`AlreadyExists`, `WrongRevision`, `NoStream`) are mapped at their call sites; this is
    /// the fallback that only has to tell retryable from terminal.
    pub(crate) fn nats<K>(op: &'static str, err: async_nats::error::Error<K>) -> Self
    where
        K: Clone + Debug + Display + PartialEq,
    {
        Self::from_text(op, err.to_string())
    }

    pub(crate) fn from_text(op: &'static str, message: String) -> Self {
        let lower = message.to_ascii_lowercase();
        if lower.contains("timed out") || lower.contains("timeout") {
            Self::Timeout { op }
        } else if ["broken pipe", "no responders", "disconnected", "connection", "not connected"]
            .iter()
            .any(|needle| lower.contains(needle))
        {
            // "no responders" also shows while JetStream recovers after a server restart.
            Self::Unavailable { op, message }
        } else if lower.contains("not found") {
            Self::NotFound { what: format!("{op}: {message}") }
        } else {
            Self::Rejected { op, message }
        }
    }
}

pub type Result<T, E = BusError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_transport_failures_as_retryable() {
        assert!(
            BusError::from_text("publish", "timed out: didn't receive ack".into()).is_retryable()
        );
        assert!(BusError::from_text("get", "request failed: no responders".into()).is_retryable());
        let refused = BusError::from_text("create stream", "subjects overlap".into());
        assert!(!refused.is_retryable(), "{refused:?}");
        assert!(matches!(
            BusError::from_text("info", "stream not found".into()),
            BusError::NotFound { .. }
        ));
    }
}
