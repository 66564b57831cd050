//! The REST API's one error shape: `{"error":{"code","message","details"}}` with the matching
//! HTTP status. `code` is a stable snake_case word clients branch on; `message` is for people.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use tonic::Code;
use utoipa::ToSchema;

/// The body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, e.g. `unauthenticated`, `forbidden`, `not_found`, `invalid_argument`,
    /// `rate_limited`, `password_change_required`, `csrf`, `unsupported_media_type`.
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// `Retry-After` for 429 and 503 answers.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), details: None, retry_after: None }
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    /// 415: the body is not declared `application/json` (see `extract::require_json`).
    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON, with `Content-Type: application/json`",
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn rate_limited(retry_after: Duration) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many attempts; retry later",
        );
        error.retry_after = Some(retry_after);
        error.details =
            Some(serde_json::json!({ "retry_after_ms": retry_after.as_millis() as u64 }));
        error
    }

    pub fn password_change_required() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "password_change_required",
            "this session holds a one-time password: change it (POST /api/auth/password) first",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(after) = self.retry_after {
            let seconds = after.as_secs_f64().ceil().max(1.0) as u64;
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// gRPC answers of the services, as REST answers.
impl From<tonic::Status> for ApiError {
    fn from(status: tonic::Status) -> Self {
        let message = status.message().to_owned();
        let (http, code) = match status.code() {
            Code::InvalidArgument | Code::OutOfRange => {
                (StatusCode::BAD_REQUEST, "invalid_argument")
            }
            Code::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            Code::PermissionDenied => (StatusCode::FORBIDDEN, "forbidden"),
            Code::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Code::AlreadyExists => (StatusCode::CONFLICT, "already_exists"),
            Code::Aborted => (StatusCode::CONFLICT, "conflict"),
            _ if ramen_proto::metadata::ErrorReason::of(&status)
                == Some(ramen_proto::metadata::ErrorReason::PasswordChangeRequired) =>
            {
                return Self::password_change_required();
            }
            Code::FailedPrecondition => (StatusCode::CONFLICT, "failed_precondition"),
            Code::ResourceExhausted => {
                let after = status
                    .metadata()
                    .get("retry-after-ms")
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .map_or(Duration::from_secs(1), Duration::from_millis);
                return Self::rate_limited(after);
            }
            Code::Unimplemented => (StatusCode::NOT_IMPLEMENTED, "not_implemented"),
            Code::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Code::DeadlineExceeded | Code::Cancelled => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        let mut error = Self::new(http, code, message);
        if http == StatusCode::SERVICE_UNAVAILABLE {
            // A service or its store that cannot answer now (restarting, a full disk): the
            // same request may succeed later, and clients that honour it back off.
            error.retry_after = Some(Duration::from_secs(1));
        }
        error
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn statuses_map_to_http_with_the_json_shape() {
        let cases = [
            (tonic::Status::invalid_argument("name: bad"), 400, "invalid_argument"),
            (tonic::Status::unauthenticated("x"), 401, "unauthenticated"),
            (tonic::Status::permission_denied("x"), 403, "forbidden"),
            (tonic::Status::not_found("group `a` not found"), 404, "not_found"),
            (tonic::Status::aborted("stale"), 409, "conflict"),
            (
                ramen_proto::metadata::ErrorReason::PasswordChangeRequired
                    .attach(tonic::Status::failed_precondition("set it")),
                403,
                "password_change_required",
            ),
            (tonic::Status::unavailable("down"), 503, "unavailable"),
            (tonic::Status::internal("boom"), 500, "internal"),
        ];
        for (status, http, code) in cases {
            let response = ApiError::from(status).into_response();
            assert_eq!(response.status().as_u16(), http);
            let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
            let json: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(json["error"]["code"], code, "{json}");
            assert!(json["error"]["message"].is_string());
        }
        let down = ApiError::from(tonic::Status::unavailable("down")).into_response();
        assert_eq!(down.headers()[header::RETRY_AFTER], "1", "a 503 says when to retry");
        let limited = ApiError::rate_limited(Duration::from_millis(1500)).into_response();
        assert_eq!(limited.headers()[header::RETRY_AFTER], "2");
    }
}
