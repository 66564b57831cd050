//! The rebalancer's errors, one variant per answer a caller branches on, and their gRPC codes.

use ramen_store::StoreError;

use crate::lb::LbError;
use crate::ports::PortError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input; the message names the field and the problem.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{0} not found")]
    NotFound(String),
    /// Valid, but the current state refuses it (nothing measured yet, no balancer resources).
    #[error("{0}")]
    FailedPrecondition(String),
    /// Another service (zone-manager, a cloud API) cannot be reached now; retry later.
    #[error("{0}")]
    Unavailable(String),
    /// The load balancer refused the change for good.
    #[error("load balancer: {0}")]
    Balancer(String),
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

impl Error {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { field, reason: reason.into() }
    }
}

impl From<PortError> for Error {
    fn from(err: PortError) -> Self {
        match err {
            PortError::Unavailable(message) => Self::Unavailable(message),
            PortError::NotFound(what) => Self::NotFound(what),
            PortError::Refused(message) => Self::FailedPrecondition(message),
        }
    }
}

impl From<LbError> for Error {
    fn from(err: LbError) -> Self {
        match err {
            LbError::Transient(message) => Self::Unavailable(message),
            LbError::NotFound(message) | LbError::NotConfigured(message) => {
                Self::FailedPrecondition(message)
            }
            LbError::Refused(message) => Self::Balancer(message),
        }
    }
}

impl From<Error> for tonic::Status {
    fn from(err: Error) -> Self {
        use tonic::Status;
        let message = err.to_string();
        match err {
            Error::Invalid { .. } => Status::invalid_argument(message),
            Error::NotFound(_) => Status::not_found(message),
            Error::FailedPrecondition(_) => Status::failed_precondition(message),
            Error::Unavailable(_) => Status::unavailable(message),
            Error::Balancer(_) => Status::aborted(message),
            Error::Store(StoreError::NotFound { .. }) => Status::not_found(message),
            Error::Store(ref s) if s.is_retryable() => Status::unavailable(message),
            Error::Store(_) => Status::internal(message),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
