//! The bus side of the zone-manager: events it publishes, events it consumes, and the worker
//! reports of its providers.

mod consume;
pub(crate) mod publish;
mod workers;

pub use consume::spawn_consumers;
pub use publish::{Caller, Publisher, own_caller};
pub use workers::spawn_worker_events;
