//! The deployer end to end, on real dependencies: `nats-server`, the embedded store, the real
//! auth and zone-manager services, and real worker processes (`ramen-runner` + the Python
//! runtime) serving a git repo made from `examples/hello-repo`.
//!
//! Needs the worker binary: `cargo build -p ramen-runner` (same target directory) first.

mod repo;
mod setup;
mod support;

mod api;
mod deletion;
mod durability;
mod git;
mod gitserver;
mod kubernetes;
mod links;
mod pipeline;
mod ports;
mod review;
