//! Errors as the apiserver sends them: a `kind: Status` body whose `reason`, `code`, `message`
//! and `details` clients branch on (kube's `Error::Api`). Messages follow the apiserver's
//! wording (`k8s.io/apimachinery/pkg/api/errors`) so a provider's error matching is exercised.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use crate::resources::ResourceType;

/// A refused request, rendered as a `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None, retry_after: None }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} \"{name}\" not found", rt.qualified()))
            .with_details(details(rt, name))
    }

    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", rt.qualified()))
            .with_details(details(rt, name))
    }

    pub fn conflict(rt: &ResourceType, name: &str) -> Self {
        Self::conflict_because(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict_because(rt: &ResourceType, name: &str, why: &str) -> Self {
        let message =
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", rt.qualified());
        Self::new(409, "Conflict", message).with_details(details(rt, name))
    }

    /// 422 Invalid with one cause per bad field, as field validation reports it.
    pub fn invalid(rt: &ResourceType, name: &str, causes: Vec<(String, String)>) -> Self {
        let listed: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let message = match listed.as_slice() {
            [one] => format!("{} \"{name}\" is invalid: {one}", rt.kind_qualified()),
            many => format!("{} \"{name}\" is invalid: [{}]", rt.kind_qualified(), many.join(", ")),
        };
        let causes: Vec<Value> = causes
            .into_iter()
            .map(|(field, message)| {
                json!({"reason": "FieldValueInvalid", "message": message, "field": field})
            })
            .collect();
        let mut d = details(rt, name);
        d["kind"] = json!(rt.kind);
        d["causes"] = json!(causes);
        Self::new(422, "Invalid", message).with_details(d)
    }

    pub fn forbidden(rt: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(403, "Forbidden", format!("{} \"{name}\" is forbidden: {why}", rt.qualified()))
            .with_details(details(rt, name))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
        )
    }

    pub fn method_not_supported(rt: &ResourceType, verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind {:?}", rt.qualified()),
        )
    }

    /// The error an injected fault answers with: reason and message by status code.
    pub fn injected(code: u16) -> Self {
        let (reason, message, retry) = match code {
            429 => ("TooManyRequests", "Too many requests, please try again later.", Some(1)),
            500 => ("InternalError", "Internal error occurred: injected by the kube double", None),
            503 => {
                ("ServiceUnavailable", "The server is currently unable to handle the request", None)
            }
            504 => {
                ("Timeout", "The server was unable to return a response in the time allotted", None)
            }
            403 => ("Forbidden", "forbidden: injected by the kube double", None),
            401 => ("Unauthorized", "Unauthorized", None),
            404 => ("NotFound", "the server could not find the requested resource", None),
            409 => ("Conflict", "Operation cannot be fulfilled: injected by the kube double", None),
            _ => ("InternalError", "injected by the kube double", None),
        };
        let mut err = Self::new(code, reason, message);
        err.retry_after = retry;
        if let Some(seconds) = retry {
            err.details = Some(json!({"retryAfterSeconds": seconds}));
        }
        err
    }

    pub fn status_body(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }
}

fn details(rt: &ResourceType, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": rt.plural});
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    d
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, axum::Json(self.status_body())).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
