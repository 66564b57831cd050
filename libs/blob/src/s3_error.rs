//! Maps the SDK's errors onto [`BlobError`] variants a caller can branch on.

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::BlobError;

/// Error codes S3 (and compatible servers) answer for transient conditions.
const TRANSIENT_CODES: &[&str] =
    &["SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling"];
const DENIED_CODES: &[&str] =
    &["AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"];

pub(crate) fn map_sdk_error<E>(
    op: &'static str,
    bucket: &str,
    err: SdkError<E, HttpResponse>,
) -> BlobError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let message = DisplayErrorContext(&err).to_string();
    match &err {
        // No usable answer arrived: the server is down, slow or cut off mid-response.
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            BlobError::Unavailable { op, message }
        }
        SdkError::DispatchFailure(failure) if failure.is_io() || failure.is_timeout() => {
            BlobError::Unavailable { op, message }
        }
        SdkError::ServiceError(service) => {
            classify(op, bucket, service.raw().status().as_u16(), service.err().code(), message)
        }
        // Construction failures and other dispatch failures (no credentials, a bad endpoint)
        // are configuration problems that a retry will not fix.
        _ => BlobError::Backend { op, message },
    }
}

fn classify(
    op: &'static str,
    bucket: &str,
    status: u16,
    code: Option<&str>,
    message: String,
) -> BlobError {
    let code = code.unwrap_or_default();
    // HEAD answers carry no body, so a missing bucket there is a bare 404 ("NotFound").
    if code == "NoSuchBucket" || (status == 404 && matches!(code, "" | "NotFound")) {
        return BlobError::NotFound { what: format!("bucket {bucket:?}"), message };
    }
    if status == 404 {
        return BlobError::NotFound { what: format!("{op} target ({code})"), message };
    }
    if matches!(status, 401 | 403) || DENIED_CODES.contains(&code) {
        return BlobError::Denied { op, message };
    }
    if matches!(status, 408 | 429 | 500..=599) || TRANSIENT_CODES.contains(&code) {
        return BlobError::Unavailable { op, message };
    }
    BlobError::Backend { op, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_codes_map_to_branchable_variants() {
        let kind = |status, code| classify("get", "b", status, code, String::new());
        assert!(matches!(kind(404, Some("NoSuchBucket")), BlobError::NotFound { .. }));
        assert!(matches!(kind(404, Some("NotFound")), BlobError::NotFound { .. }));
        assert!(matches!(kind(403, Some("AccessDenied")), BlobError::Denied { .. }));
        assert!(matches!(kind(400, Some("InvalidAccessKeyId")), BlobError::Denied { .. }));
        assert!(kind(503, Some("SlowDown")).is_retryable());
        assert!(kind(500, None).is_retryable());
        assert!(kind(429, None).is_retryable());
        let terminal = kind(400, Some("InvalidArgument"));
        assert!(matches!(terminal, BlobError::Backend { .. }) && !terminal.is_retryable());
    }
}
