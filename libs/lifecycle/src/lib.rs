//! Process lifecycle shared by every ramen service: `/healthz`, `/readyz` (each dependency
//! pinged with a 1 s deadline), `/metrics`, SIGTERM/SIGINT handling (readiness fails first, a
//! second signal exits at once), and named background tasks that are cancelled and awaited
//! within a drain deadline.

mod health;
mod http;
mod local_stream;
mod poll_again;
mod routes;
mod shutdown;
mod tasks;
mod timer_anchor;

pub use health::{Health, HealthCheck, Startup, admin_router, no_delay, public_readiness_router};
pub use http::{
    BODY_READ_TIMEOUT, BodyRefused, HEADER_READ_TIMEOUT, Limits, MAX_CONNECTIONS, OpenConnections,
    poll_until, read_body, serve_http, serve_http_local, serve_http_with,
};
pub use local_stream::LocalStream;
pub use poll_again::PollAgain;
pub use routes::{Answer, FastRoute, Routed, Routes};
pub use shutdown::{Shutdown, listen_for_signals};
pub use tasks::{TaskCenter, TaskError};
