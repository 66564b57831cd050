//! What every ramen service process shares: the adapters its configuration asks for
//! ([`Platform`]), their readiness checks, the admin port (`/healthz`, `/readyz`,
//! `/metrics`), gRPC serving with trace-context extraction, and typed event subjects.

mod checks;
mod grpc;
pub mod paging;
mod platform;
mod process;

pub use grpc::serve_grpc;
pub use platform::{Platform, PlatformError};
pub use process::{Running, main};

use ramen_bus::{Schema, Subject};
use ramen_proto::event::Event;

/// The bus subject of an event type, with its schema header.
pub fn subject<T: Event>() -> Subject<T> {
    Subject::new(T::SUBJECT, Schema::new(T::NAME, 1))
}
