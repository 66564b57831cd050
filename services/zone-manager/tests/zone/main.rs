//! The zone-manager end to end: its gRPC API on a real NATS and the embedded store, the local
//! provider running real worker processes (`ramen-runner` + the Python runtime) serving
//! `examples/hello-repo`.
//!
//! Needs the worker binary: `cargo build -p ramen-runner` (same target directory) first.

mod mcp;
mod support;

mod aws;
mod conformance;
mod events;
mod failures;
mod gcp;
mod kubernetes;
mod policy;
mod realauth;
mod recovery;
mod teardown;
mod tickets;
mod tracks;
mod validation;
