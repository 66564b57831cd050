//! W3C `traceparent` across process boundaries: gRPC metadata, HTTP headers, NATS headers.
//! NATS code uses [`current_traceparent`] when publishing and [`set_parent_from`] with the
//! header value when consuming, which keeps the bus crate free of OpenTelemetry.

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct Map(HashMap<String, String>);

impl Injector for Map {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

impl Extractor for Map {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The `traceparent` of the current span, when it belongs to a valid trace.
pub fn current_traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    // No valid span, no `traceparent`: what the propagator would conclude, without a map
    // (the edge asks this on every request, mostly outside any trace).
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut map = Map(HashMap::new());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&context, &mut map));
    map.0.remove("traceparent")
}

/// Makes `span` a child of the remote span named by a `traceparent` value.
pub fn set_parent_from(span: &tracing::Span, traceparent: &str) {
    let map = Map(HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]));
    let context = opentelemetry::global::get_text_map_propagator(|p| p.extract(&map));
    // Fails only when the span is disabled, in which case there is nothing to parent.
    let _ = span.set_parent(context);
}

/// Makes `span` a child of the trace context carried by HTTP headers, if any.
pub fn extract_http(span: &tracing::Span, headers: &http::HeaderMap) {
    // A disabled span (its level filtered out) takes no parent: skip reading the headers.
    if span.is_disabled() {
        return;
    }
    let context = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(headers)));
    let _ = span.set_parent(context);
}

/// Makes `span` a child of the trace context carried by gRPC request metadata, if any.
pub fn extract_grpc(span: &tracing::Span, metadata: &tonic::metadata::MetadataMap) {
    let headers = metadata.clone().into_headers();
    extract_http(span, &headers);
}

/// Client interceptor that writes the current span's `traceparent` into gRPC metadata.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcTraceInterceptor;

impl tonic::service::Interceptor for GrpcTraceInterceptor {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = current_traceparent()
            && let Ok(value) = value.parse()
        {
            request.metadata_mut().insert("traceparent", value);
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_round_trips_through_a_span() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("consume");
            set_parent_from(&span, PARENT);
            let _entered = span.enter();
            let out = current_traceparent().expect("a traceparent for the child span");
            // Same trace id, a new span id: the consumer's span is a child of the publisher's.
            assert!(out.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"), "{out}");
            assert_ne!(out, PARENT);
            let context = tracing::Span::current().context();
            assert!(context.span().span_context().is_valid());
        });
    }

    /// Outside any trace there is nothing to pass on, and asking builds nothing.
    #[test]
    fn no_traceparent_outside_a_trace() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        assert_eq!(current_traceparent(), None, "no span at all");
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            let _entered = tracing::info_span!("untraced").entered();
            assert_eq!(current_traceparent(), None, "a span OpenTelemetry does not follow");
        });
    }

    #[test]
    fn grpc_interceptor_injects_current_context() {
        use tonic::service::Interceptor;
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("call");
            set_parent_from(&span, PARENT);
            let _entered = span.enter();
            let request = GrpcTraceInterceptor.call(tonic::Request::new(())).unwrap();
            let header = request.metadata().get("traceparent").unwrap().to_str().unwrap();
            assert!(header.contains("4bf92f3577b34da6a3ce929d0e0e4736"));

            let server_span = tracing::info_span!("serve");
            extract_grpc(&server_span, request.metadata());
            let _entered = server_span.enter();
            assert!(current_traceparent().unwrap().contains("4bf92f3577b34da6a3ce929d0e0e4736"));
        });
    }
}
