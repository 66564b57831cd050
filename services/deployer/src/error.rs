//! The deployer's errors, one variant per answer a caller branches on, their gRPC codes, and
//! which ones a job retries (nak with delay) rather than fails for good.

use ramen_store::StoreError;

use crate::git::GitError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input; the message names the field and the problem.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    Unauthenticated(String),
    /// Another service (auth, zone-manager, a worker node) or the blob store cannot be reached
    /// now. Retryable.
    #[error("{service} unavailable: {message}")]
    Unavailable { service: &'static str, message: String },
    /// Another service refused a call the deployer made on its own behalf. Terminal.
    #[error("{service} refused: {message}")]
    Refused { service: &'static str, message: String },
    #[error(transparent)]
    Git(#[from] GitError),
    /// The repo holds something the pipeline refuses (a link out of the tree, a file over its
    /// limit, a special file); the message names the file. Terminal: the commit must change.
    #[error("{0}")]
    RepoContent(String),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("blob store: {0}")]
    Blob(#[from] ramen_blob::BlobError),
    /// This deployer no longer holds the job (its lease lapsed or another claim took over).
    #[error("lost the lease of job {0}")]
    LeaseLost(String),
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { field, reason: reason.into() }
    }

    /// Whether trying again later can succeed without anything changing.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Git(err) => err.is_retryable(),
            Self::Store(err) => err.is_retryable(),
            Self::Bus(err) => err.is_retryable(),
            Self::Blob(err) => err.is_retryable(),
            _ => false,
        }
    }

    /// Maps a failed call to another service: outages are retryable (the one table in
    /// `ramen-clients`), refusals are not.
    pub fn from_upstream(error: ramen_clients::UpstreamError) -> Self {
        use tonic::Code;
        let service = error.service;
        let message = error.message.clone();
        match error.code {
            _ if error.is_retryable() => Self::Unavailable { service, message },
            Code::NotFound => Self::NotFound(message),
            Code::InvalidArgument => Self::Refused { service, message },
            Code::FailedPrecondition => Self::FailedPrecondition(format!("{service}: {message}")),
            Code::PermissionDenied => Self::PermissionDenied(message),
            Code::Unauthenticated => Self::Unauthenticated(message),
            code => Self::Refused { service, message: format!("{code:?}: {message}") },
        }
    }
}

impl From<ramen_clients::UpstreamError> for Error {
    fn from(error: ramen_clients::UpstreamError) -> Self {
        Self::from_upstream(error)
    }
}

impl From<ramen_access::Refusal> for Error {
    fn from(refusal: ramen_access::Refusal) -> Self {
        use ramen_access::Refusal;
        match refusal {
            Refusal::Unauthenticated(message) => Self::Unauthenticated(message),
            Refusal::NotFound(message) => {
                Self::NotFound(message.trim_end_matches(" not found").to_owned())
            }
            Refusal::Denied(message) => Self::PermissionDenied(message),
            Refusal::PasswordChangeRequired => {
                Self::PermissionDenied(Refusal::PasswordChangeRequired.to_string())
            }
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
            Error::AlreadyExists(_) => Status::already_exists(message),
            Error::FailedPrecondition(_) | Error::RepoContent(_) => {
                Status::failed_precondition(message)
            }
            Error::PermissionDenied(_) => Status::permission_denied(message),
            Error::Unauthenticated(_) => Status::unauthenticated(message),
            Error::Git(ref git) if git.is_invalid_input() => Status::invalid_argument(message),
            Error::Store(StoreError::NotFound { .. }) => Status::not_found(message),
            ref other if other.is_retryable() => Status::unavailable(message),
            _ => Status::internal(message),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
