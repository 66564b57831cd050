//! The zone-manager's errors, one variant per answer a caller branches on, and their gRPC codes.

use ramen_store::StoreError;

use crate::model::ProviderKind;
use crate::provider::ProviderError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input; the message names the field and the problem.
    #[error("{field}: {reason}")]
    Invalid { field: std::borrow::Cow<'static, str>, reason: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The request is valid but the current state refuses it (size not allowed by the zone,
    /// placement being torn down, nothing deployed yet...).
    #[error("{0}")]
    FailedPrecondition(String),
    /// Zones of this provider can be recorded, but no cluster of it is configured to run their
    /// workers in.
    #[error(
        "the {} zone provider is not configured (zone `{zone}`): add a [kubernetes.clusters.<name>] \
         with provider = \"{}\" and the region that holds the zone",
        .provider.name(),
        .provider.name()
    )]
    ProviderUnavailable { provider: ProviderKind, zone: String },
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Another service (auth) failed to answer.
    #[error("{0}")]
    Upstream(#[from] ramen_clients::UpstreamError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
}

impl Error {
    pub fn invalid(
        field: impl Into<std::borrow::Cow<'static, str>>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Invalid { field: field.into(), reason: reason.into() }
    }

    /// Whether trying again later can succeed without anything changing (outages, races).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(err) => err.is_retryable(),
            Self::Upstream(err) => err.is_retryable(),
            Self::Provider(err) => err.is_retryable(),
            Self::Bus(err) => err.is_retryable(),
            _ => false,
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
            Error::FailedPrecondition(_) => Status::failed_precondition(message),
            Error::ProviderUnavailable { .. } => Status::unimplemented(message),
            Error::Provider(ProviderError::NothingDeployed(_)) => {
                Status::failed_precondition(message)
            }
            Error::Provider(ref p) if p.is_retryable() => Status::unavailable(message),
            Error::Provider(_) => Status::internal(message),
            Error::Store(StoreError::NotFound { .. }) => Status::not_found(message),
            Error::Store(ref s) if s.is_retryable() => Status::unavailable(message),
            Error::Store(_) => Status::internal(message),
            Error::Upstream(ref upstream) if !upstream.is_retryable() => upstream.to_status(),
            Error::Upstream(_) | Error::Bus(_) => Status::unavailable(message),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
