//! The one channel builder and the one call layer.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ramen_access::{AudienceKeys, Caller, TICKET_HEADER, TicketKeys};
use ramen_proto::metadata;
use tonic::body::Body;
use tonic::transport::channel::ResponseFuture;
use tonic::transport::{Channel, Endpoint};

use crate::error::UpstreamError;

/// Connecting gives up after this; the call then fails UNAVAILABLE and is retried by whoever
/// made it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A channel whose every call carries the caller's ticket, signed for the one audience the
/// channel talks to (a service's name, or a placement's worker nodes: `ramen_access::audience`),
/// the request id and the current span's `traceparent`. The caller is the one
/// [`Caller::request`] put in the request's extensions; a request without one goes as anonymous
/// (the server then decides what an anonymous caller may do: log in, and nothing else).
#[derive(Clone)]
pub struct Signed {
    inner: Channel,
    keys: Arc<AudienceKeys>,
    default_caller: Caller,
}

impl Signed {
    /// Signs for `audience` with its key, derived once from the master `keys`.
    pub fn new(inner: Channel, keys: &TicketKeys, audience: &str) -> Self {
        Self { inner, keys: Arc::new(keys.audience(audience)), default_caller: Caller::default() }
    }

    /// Requests that name no caller go as `caller` instead of anonymous (tools and tests that
    /// act as one identity throughout).
    pub fn with_default_caller(mut self, caller: Caller) -> Self {
        self.default_caller = caller;
        self
    }
}

/// A lazily connected channel to `url` (`http://host:port`), signing for `audience` (the
/// service at `url`: `ramen_access::audience`). `timeout` bounds each call unless the request
/// sets its own (`tonic::Request::set_timeout`, which travels as `grpc-timeout` and is the
/// tighter of the two).
pub fn connect_lazy(
    url: &str,
    timeout: Option<Duration>,
    keys: Arc<TicketKeys>,
    audience: &str,
) -> Result<Signed, UpstreamError> {
    Ok(Signed::new(unsigned(url, timeout)?, &keys, audience))
}

/// The lazily connected channel under [`connect_lazy`], before any signing.
pub(crate) fn unsigned(url: &str, timeout: Option<Duration>) -> Result<Channel, UpstreamError> {
    let mut endpoint = Endpoint::from_shared(url.to_owned())
        .map_err(|e| UpstreamError::config(format!("endpoint `{url}`: {e}")))?
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some(timeout) = timeout {
        endpoint = endpoint.timeout(timeout);
    }
    Ok(endpoint.connect_lazy())
}

impl tower::Service<http::Request<Body>> for Signed {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        tower::Service::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let caller = request
            .extensions_mut()
            .remove::<Caller>()
            .unwrap_or_else(|| self.default_caller.clone());
        let ticket = self.keys.sign(&caller, ramen_access::ticket::now_ms());
        let headers = request.headers_mut();
        if let Ok(value) = http::HeaderValue::try_from(ticket) {
            headers.insert(TICKET_HEADER, value);
        }
        if !caller.request_id.is_empty()
            && !headers.contains_key(metadata::REQUEST_ID)
            && let Ok(value) = http::HeaderValue::try_from(caller.request_id.as_str())
        {
            headers.insert(metadata::REQUEST_ID, value);
        }
        if !headers.contains_key("traceparent")
            && let Some(traceparent) = ramen_telemetry::current_traceparent()
            && let Ok(value) = http::HeaderValue::try_from(traceparent)
        {
            headers.insert("traceparent", value);
        }
        tower::Service::call(&mut self.inner, request)
    }
}
