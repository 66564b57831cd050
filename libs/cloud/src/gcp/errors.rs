//! Google API errors (one `gax` error type for Compute, IAM and Resource Manager) as
//! [`CloudError`]s, and the Compute operations a change answers, followed to `DONE`.

use google_cloud_compute_v1::Error;
use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;

use super::Context;
use crate::CloudError;

/// How an answer went, for the steps that branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    NotFound,
    /// 409: made already (insert), or an etag gone stale (IAM's `ABORTED`).
    Conflict,
    /// 412: the fingerprint moved.
    Stale,
    /// Still referenced by another resource (delete of something in use).
    InUse,
    /// Another operation on the resource is still running.
    NotReady,
    Other,
}

pub fn kind(err: &Error) -> Kind {
    let payload = payload(err);
    match err.http_status_code() {
        Some(404) => Kind::NotFound,
        Some(409) => Kind::Conflict,
        Some(412) => Kind::Stale,
        Some(400) if payload.contains("resourceInUseByAnotherResource") => Kind::InUse,
        Some(400) if payload.contains("resourceNotReady") => Kind::NotReady,
        _ => Kind::Other,
    }
}

fn payload(err: &Error) -> String {
    err.http_payload().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default()
}

/// Whether the API's error body says `text` (the messages some refusals are told apart by).
pub fn says(err: &Error, text: &str) -> bool {
    payload(err).contains(text)
}

/// `api` (`Compute`, `IAM`, `Resource Manager`), `what` the call was about.
pub fn gax_error(api: &str, what: &str, err: Error) -> CloudError {
    let message = format!("{api} API, {what}: {err}");
    if err.is_authentication() {
        return CloudError::NotConfigured(message);
    }
    if err.is_timeout()
        || err.is_io()
        || err.is_connect()
        || err.is_transport()
        || err.is_exhausted()
    {
        return CloudError::Unavailable(message);
    }
    match (err.http_status_code(), kind(&err)) {
        (_, Kind::Conflict | Kind::Stale | Kind::NotReady | Kind::InUse) => {
            CloudError::Unavailable(message)
        }
        (Some(429 | 500..=599), _) => CloudError::Unavailable(message),
        // IAM: a service account just made is not visible to every endpoint yet.
        (Some(400 | 404), _) if payload(&err).contains("does not exist") => {
            CloudError::Unavailable(message)
        }
        _ => CloudError::Refused(message),
    }
}

/// Follows a global operation until it is `DONE` (within `operation_wait`); answers its
/// error as a refusal, or unavailable while it is still running, so the step is asked again.
pub async fn done(context: Context<'_>, what: &str, op: Operation) -> Result<(), CloudError> {
    let deadline = tokio::time::Instant::now() + context.settings.operation_wait;
    let mut op = op;
    let mut attempt = 0;
    loop {
        failed(what, &op)?;
        if op.status.clone().unwrap_or(Status::Done) == Status::Done {
            return Ok(());
        }
        let name = op.name.clone().unwrap_or_default();
        if tokio::time::Instant::now() >= deadline {
            return Err(CloudError::Unavailable(format!(
                "{what}: operation {name} is still {}; retrying",
                op.status.as_ref().and_then(|s| s.name()).unwrap_or("running")
            )));
        }
        pause(attempt).await;
        attempt += 1;
        let get = context
            .clients
            .backend_services
            .get_operation()
            .set_project(context.project)
            .set_operation(&name);
        op = context
            .call(what, get.send())
            .await?
            .map_err(|e| gax_error("Compute", &format!("{what}: operation {name}"), e))?;
    }
}

async fn pause(attempt: u32) {
    // 100 ms, 200, 400, 800, then every second: an operation of a few seconds is seen soon.
    tokio::time::sleep(
        std::time::Duration::from_millis(100 << attempt.min(3))
            .min(std::time::Duration::from_secs(1)),
    )
    .await;
}

fn failed(what: &str, op: &Operation) -> Result<(), CloudError> {
    let errors = op.error.as_ref().map(|e| e.errors.as_slice()).unwrap_or_default();
    if errors.is_empty() {
        return Ok(());
    }
    let codes: Vec<&str> = errors.iter().filter_map(|e| e.code.as_deref()).collect();
    let messages: Vec<String> = errors
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e.code.as_deref().unwrap_or("error"),
                e.message.as_deref().unwrap_or_default()
            )
        })
        .collect();
    let message = format!("{what} failed: {}", messages.join("; "));
    let retryable = codes.iter().any(|c| {
        matches!(
            *c,
            "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE" | "RESOURCE_NOT_READY" | "CONDITION_NOT_MET"
        )
    });
    Err(if retryable { CloudError::Unavailable(message) } else { CloudError::Refused(message) })
}
