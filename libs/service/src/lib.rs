//! What every ramen service process shares: the adapters its configuration asks for
//! ([`Platform`]), their readiness checks, the admin port (`/healthz`, `/readyz`,
//! `/metrics`), gRPC serving with trace-context extraction, and typed event subjects.

mod checks;
mod grpc;
pub mod paging;
pub use ramen_rules as rules;
mod platform;
mod process;
pub mod validate;

pub use grpc::serve_grpc;
pub use platform::{Platform, PlatformError, bus_credentials, bus_names, ticket_keys};
pub use process::{Running, forbid_dumping, main};
/// Who is calling (re-exported: every service names it from here or from `ramen-access`).
pub use ramen_access::Caller;

use ramen_bus::{Bus, BusError, EventStreamSpec, Schema, Subject};
use ramen_config::NatsConfig;
use ramen_proto::event::{EVENTS_FILTER, Event};

/// The bus subject of an event type, with its schema header.
pub fn subject<T: Event>() -> Subject<T> {
    Subject::new(T::SUBJECT, Schema::new(T::NAME, 1))
}

/// Creates (or updates to this one spec) the domain-event stream every service publishes on
/// (`nats.events_stream`, subjects `ramen.events.v1.>`). Idempotent: every publishing service
/// ensures it at start-up, so whichever comes up first on a fresh server creates it, and one
/// spec here means no two services can fight over its settings.
pub async fn ensure_event_stream(bus: &Bus, nats: &NatsConfig) -> Result<(), BusError> {
    let spec = EventStreamSpec {
        name: nats.events_stream.clone(),
        subjects: vec![EVENTS_FILTER.to_owned()],
        max_age: nats.max_age,
        max_payload: nats.max_payload,
        ..EventStreamSpec::default()
    };
    bus.ensure_event_stream(&spec).await
}
