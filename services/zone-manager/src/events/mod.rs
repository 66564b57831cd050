//! The bus side of the zone-manager: events it publishes, events it consumes, and the worker
//! reports of its providers.

mod consume;
mod publish;
mod workers;

pub use consume::spawn_consumers;
pub use publish::{Caller, Publisher};
pub use workers::spawn_worker_events;

use ramen_bus::{Bus, EventStreamSpec};
use ramen_config::Config;
use ramen_proto::event::EVENTS_FILTER;

/// The domain-event stream every service publishes on (`RAMEN_EVENTS`). Ensured here too, so
/// the zone-manager starts on a fresh server whichever service comes up first.
pub async fn ensure_stream(bus: &Bus, config: &Config) -> Result<(), ramen_bus::BusError> {
    let spec = EventStreamSpec {
        name: config.nats.events_stream.clone(),
        subjects: vec![EVENTS_FILTER.to_owned()],
        max_age: config.nats.max_age,
        max_payload: config.nats.max_payload,
        ..EventStreamSpec::default()
    };
    bus.ensure_event_stream(&spec).await
}
