//! Request ids: `x-request-id` is taken from the client when it is a sane token (so a client's
//! own id ties its logs to ours), else a UUIDv7 is made; it is echoed on the response, put on
//! the request's span, and forwarded to every gRPC call (and so into audit entries).
//!
//! The span records the method and the path only: never the query (a streaming route may carry
//! an access token as `?t=`) and never a body.

use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

/// The current request's id, in the request extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId(pub String);

/// Accepted from clients: 1-128 characters of `[A-Za-z0-9._:-]`.
pub fn accept(value: &str) -> Option<&str> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    ok.then_some(value)
}

pub async fn layer(mut request: Request, next: Next) -> Response {
    let begun = begin(&mut request);
    begun.answer(next.run(request)).await
}

/// A request's id and span, made before it is answered.
pub struct Begun {
    id: String,
    span: tracing::Span,
}

/// Takes or makes `request`'s id, puts it in its extensions and opens its span: what [`layer`]
/// does first, for a route served ahead of the router (the MCP edge's).
pub fn begin(request: &mut Request) -> Begun {
    let given = request.headers().get(HEADER).and_then(|v| v.to_str().ok()).and_then(accept);
    let id = given.map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned);
    request.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("api", method = %request.method(), path = %request.uri().path(), request_id = %id);
    ramen_telemetry::extract_http(&span, request.headers());
    Begun { id, span }
}

impl Begun {
    /// Runs `answering` in the request's span, logs the status and echoes the id on the
    /// response.
    pub async fn answer(self, answering: impl Future<Output = Response>) -> Response {
        let Self { id, span } = self;
        let started = Instant::now();
        let mut response = answering.instrument(span.clone()).await;
        span.in_scope(|| {
            tracing::debug!(
                status = response.status().as_u16(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "answered"
            );
        });
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(HEADER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::accept;

    #[test]
    fn only_sane_ids_are_taken_from_clients() {
        assert_eq!(accept("abc-123:x.y_z"), Some("abc-123:x.y_z"));
        for bad in ["", "has space", "new\nline", "ünï", &"x".repeat(129)] {
            assert_eq!(accept(bad), None, "{bad:?}");
        }
    }
}
