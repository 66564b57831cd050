//! Clients of the services the deployer drives: auth and the zone-manager over gRPC (and the
//! worker nodes' admin API for reloads), the bus for events.

pub mod auth;
pub mod events;
pub mod zones;

pub use auth::{Audit, AuthClient};
pub use events::Events;
pub use zones::ZoneClient;
