//! Maps Compute API errors onto [`LbError`].

use crate::lb::LbError;

pub fn gax_error(what: &str, err: google_cloud_compute_v1::Error) -> LbError {
    let message = format!("Compute API, {what}: {err}");
    if err.is_authentication() {
        return LbError::NotConfigured(message);
    }
    if err.is_timeout()
        || err.is_io()
        || err.is_connect()
        || err.is_transport()
        || err.is_exhausted()
    {
        return LbError::Transient(message);
    }
    let payload =
        err.http_payload().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
    match err.http_status_code() {
        Some(404) => LbError::NotFound(message),
        // 412: the fingerprint moved (someone else changed it); 409: conflicting operation.
        Some(409 | 412 | 429 | 500..=599) => LbError::Transient(message),
        // Another operation on the resource is still running.
        Some(400) if payload.contains("resourceNotReady") => LbError::Transient(message),
        _ => LbError::Refused(message),
    }
}
