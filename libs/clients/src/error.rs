//! What a failed call to another service is.

use ramen_proto::metadata::ErrorReason;

/// A call to another service that did not succeed: which service, the gRPC code, its message
/// and, when the service said, the structured reason (`x-ramen-reason`).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{service}: {message}")]
pub struct UpstreamError {
    pub service: &'static str,
    pub code: tonic::Code,
    pub message: String,
    pub reason: Option<ErrorReason>,
}

/// The one table of gRPC codes worth trying again: the service is down or overloaded
/// (UNAVAILABLE, RESOURCE_EXHAUSTED), the call ran out of time or was cut (DEADLINE_EXCEEDED,
/// CANCELLED, UNKNOWN — a connection reset surfaces as UNKNOWN), or it lost a race it may win
/// next time (ABORTED: a version conflict).
pub fn is_retryable(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(
        code,
        Unavailable | DeadlineExceeded | Unknown | Cancelled | ResourceExhausted | Aborted
    )
}

impl UpstreamError {
    pub fn from_status(service: &'static str, status: tonic::Status) -> Self {
        Self {
            service,
            code: status.code(),
            reason: ErrorReason::of(&status),
            message: status.message().to_owned(),
        }
    }

    /// A client that cannot even be built (a bad endpoint URL): not retryable.
    pub fn config(message: String) -> Self {
        Self { service: "config", code: tonic::Code::InvalidArgument, message, reason: None }
    }

    pub fn is_retryable(&self) -> bool {
        is_retryable(self.code)
    }

    pub fn is_not_found(&self) -> bool {
        self.code == tonic::Code::NotFound
    }

    /// The error as a status to answer our own caller with: the same code and reason, the
    /// message naming the service it came from.
    pub fn to_status(&self) -> tonic::Status {
        let status = tonic::Status::new(self.code, self.to_string());
        match self.reason {
            Some(reason) => reason.attach(status),
            None => status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_retry_table() {
        for code in [
            tonic::Code::Unavailable,
            tonic::Code::DeadlineExceeded,
            tonic::Code::Aborted,
            tonic::Code::ResourceExhausted,
        ] {
            assert!(is_retryable(code), "{code:?}");
        }
        for code in [
            tonic::Code::NotFound,
            tonic::Code::InvalidArgument,
            tonic::Code::PermissionDenied,
            tonic::Code::FailedPrecondition,
            tonic::Code::Unauthenticated,
        ] {
            assert!(!is_retryable(code), "{code:?}");
        }
    }

    #[test]
    fn the_reason_survives_the_hop() {
        let status = ErrorReason::PasswordChangeRequired
            .attach(tonic::Status::permission_denied("change it first"));
        let error = UpstreamError::from_status("auth", status);
        assert_eq!(error.reason, Some(ErrorReason::PasswordChangeRequired));
        assert_eq!(ErrorReason::of(&error.to_status()), Some(ErrorReason::PasswordChangeRequired));
        assert_eq!(error.to_string(), "auth: change it first");
    }
}
