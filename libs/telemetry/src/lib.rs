//! Telemetry for every ramen process: structured logs (`tracing`, pretty or JSON),
//! OpenTelemetry traces exported per the standard `OTEL_*` variables (none set = no export,
//! but inbound W3C trace context is still honoured), `traceparent` carried across gRPC
//! metadata and NATS headers, and one Prometheus registry per process.

mod init;
mod metrics;
mod propagation;

pub use init::{Telemetry, TelemetryError, init};
pub use metrics::Metrics;
pub use propagation::{
    GrpcTraceInterceptor, current_traceparent, extract_grpc, extract_http, set_parent_from,
};
