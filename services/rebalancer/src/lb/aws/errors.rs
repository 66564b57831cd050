//! Maps ELBv2 SDK errors onto [`LbError`]: what a retry can fix, what is missing, what is not.

use aws_sdk_elasticloadbalancingv2::config::http::HttpResponse;
use aws_sdk_elasticloadbalancingv2::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::lb::LbError;

const TRANSIENT_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ResourceInUse",
    "InternalFailure",
    "ServiceUnavailable",
];
const NOT_FOUND_CODES: &[&str] =
    &["ListenerNotFound", "LoadBalancerNotFound", "TargetGroupNotFound"];

pub fn sdk_error<E>(op: &str, err: SdkError<E, HttpResponse>) -> LbError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let message = format!("ELBv2 {op}: {}", DisplayErrorContext(&err));
    match &err {
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => LbError::Transient(message),
        SdkError::DispatchFailure(f) if f.is_io() || f.is_timeout() => LbError::Transient(message),
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let code = service.err().code().unwrap_or_default();
            if NOT_FOUND_CODES.contains(&code) {
                LbError::NotFound(message)
            } else if TRANSIENT_CODES.contains(&code) || matches!(status, 429 | 500..=599) {
                LbError::Transient(message)
            } else {
                LbError::Refused(message)
            }
        }
        // No credentials, a malformed endpoint: configuration a retry will not fix.
        _ => LbError::NotConfigured(message),
    }
}
