use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use ramen_config::{LogConfig, LogFormat};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {reason}")]
    Filter { filter: String, reason: String },
    #[error("cannot build the OTLP exporter from OTEL_* variables: {0}")]
    Exporter(String),
    #[error("a global subscriber is already installed")]
    AlreadyInstalled,
}

/// Keeps the trace pipeline alive; [`Telemetry::shutdown`] flushes it (call it last).
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans leave the process (an OTLP endpoint was configured).
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes buffered spans. Idempotent.
    pub fn shutdown(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(err) = provider.shutdown()
        {
            tracing::warn!(%err, "flushing traces at shutdown failed");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Installs the global subscriber for `service`. `RUST_LOG` wins over `log.level`.
pub fn init(service: &str, log: &LogConfig) -> Result<Telemetry, TelemetryError> {
    // The W3C propagator is installed even without an exporter so inbound context is honoured
    // and forwarded (a trace started by a client stays one trace through ramen).
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let directive = std::env::var("RUST_LOG").unwrap_or_else(|_| log.level.clone());
    let filter = EnvFilter::try_new(&directive)
        .map_err(|e| TelemetryError::Filter { filter: directive.clone(), reason: e.to_string() })?;
    let fmt = match log.format {
        LogFormat::Json => tracing_subscriber::fmt::layer().json().flatten_event(true).boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_target(true).boxed(),
    };

    let provider = if otlp_configured() { Some(tracer_provider(service)?) } else { None };
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer(service.to_owned())).boxed());
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init()
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(Telemetry { provider })
}

fn otlp_configured() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|var| std::env::var(var).is_ok_and(|v| !v.trim().is_empty()))
        && std::env::var("OTEL_TRACES_EXPORTER").map_or(true, |v| v != "none")
}

fn tracer_provider(service: &str) -> Result<SdkTracerProvider, TelemetryError> {
    // The builder reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) itself.
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES override the default service name.
    let resource = Resource::builder().with_service_name(service.to_owned()).build();
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
}
