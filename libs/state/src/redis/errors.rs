use fred::error::{Error, ErrorKind};

use crate::StateError;

/// Server replies that mean "not now" rather than "never".
const TRANSIENT_REPLIES: &[&str] =
    &["LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS"];

pub(super) fn map_error(op: &'static str, error: Error) -> StateError {
    let message = error.to_string();
    match error.kind() {
        ErrorKind::IO
        | ErrorKind::Timeout
        | ErrorKind::Canceled
        | ErrorKind::Routing
        | ErrorKind::Backpressure
        | ErrorKind::Cluster
        | ErrorKind::Sentinel => StateError::Unavailable { op, message },
        ErrorKind::Config | ErrorKind::Url => StateError::Config(message),
        _ if TRANSIENT_REPLIES.iter().any(|p| error.details().starts_with(p)) => {
            StateError::Unavailable { op, message }
        }
        _ => StateError::Backend { op, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_trouble_is_retryable_and_refusals_are_not() {
        let kind = |k, details: &str| map_error("get", Error::new(k, details.to_owned()));
        assert!(kind(ErrorKind::IO, "connection reset").is_retryable());
        assert!(kind(ErrorKind::Timeout, "").is_retryable());
        assert!(kind(ErrorKind::Unknown, "LOADING Redis is loading").is_retryable());
        assert!(kind(ErrorKind::Unknown, "MASTERDOWN link down").is_retryable());
        assert!(matches!(kind(ErrorKind::Auth, "WRONGPASS"), StateError::Backend { .. }));
        assert!(matches!(kind(ErrorKind::Unknown, "ERR script"), StateError::Backend { .. }));
    }
}
