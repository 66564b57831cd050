//! Process lifecycle shared by every ramen service: `/healthz`, `/readyz` (each dependency
//! pinged with a 1 s deadline), `/metrics`, SIGTERM/SIGINT handling (readiness fails first, a
//! second signal exits at once), and named background tasks that are cancelled and awaited
//! within a drain deadline.

mod health;
mod shutdown;
mod tasks;

pub use health::{Health, HealthCheck, Startup, admin_router, no_delay, serve_http};
pub use shutdown::{Shutdown, listen_for_signals};
pub use tasks::{TaskCenter, TaskError};
