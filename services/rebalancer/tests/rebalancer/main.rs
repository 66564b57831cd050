//! The rebalancer end to end: real NATS, the embedded store, real auth for the audit log, and
//! per test either the real zone-manager with real workers (`ramen-runner` + the Python
//! runtime serving `examples/hello-repo`) or a table of cloud zones whose balancers are
//! `moto_server` (AWS) and a local HTTP server playing the Compute API (GCP).
//!
//! The zone-manager tests need the worker binary: `cargo build -p ramen-runner` first (same
//! target directory).

mod gcp_standin;
mod support;
mod workers;

mod autoscaler;
mod aws;
mod cells;
mod edge;
mod gcp;
mod leadership;
mod scheduler;
