//! AWS SDK errors (IAM, ELBv2, WAFv2 share the smithy error type) as [`CloudError`]s, and the
//! service error codes the steps branch on.

use aws_sdk_iam::config::http::HttpResponse;
use aws_sdk_iam::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::CloudError;

const TRANSIENT_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalFailure",
    "ServiceUnavailable",
    "ServiceFailure",
    "WAFInternalErrorException",
    "WAFUnavailableEntityException",
];

/// The service's error code, when the call reached the service.
pub fn code<E>(err: &SdkError<E, HttpResponse>) -> Option<&str>
where
    E: ProvideErrorMetadata,
{
    match err {
        SdkError::ServiceError(service) => service.err().code(),
        _ => None,
    }
}

pub fn sdk_error<E>(api: &str, op: &str, err: SdkError<E, HttpResponse>) -> CloudError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let message = format!("{api} {op}: {}", DisplayErrorContext(&err));
    match &err {
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => CloudError::Unavailable(message),
        SdkError::DispatchFailure(f) if f.is_io() || f.is_timeout() => {
            CloudError::Unavailable(message)
        }
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let code = service.err().code().unwrap_or_default();
            if TRANSIENT_CODES.contains(&code) || matches!(status, 429 | 500..=599) {
                CloudError::Unavailable(message)
            } else {
                CloudError::Refused(message)
            }
        }
        // No credentials, a malformed endpoint: configuration a retry will not fix.
        _ => CloudError::NotConfigured(message),
    }
}
