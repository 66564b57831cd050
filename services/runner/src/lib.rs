//! The worker node: serves MCP streamable HTTP to clients, enforces keys, IP rules, blocked
//! lists and the in-flight cap, and drives one supervised Python runtime that runs the
//! group's packages. See `docs/architecture.md` ("Data plane").

pub mod admin;
pub mod build_env;
pub mod call_log;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod confine;
mod drain;
pub mod load;
pub mod mcp;
pub mod metrics;
pub mod node;
mod node_bus;
pub mod policy;
mod policy_file;
pub mod reload;
pub mod runtime;
mod worker;

include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

pub use config::{BlobConfig, NodeConfig, SnapshotRef};
pub use policy::PolicyConfig;
pub use worker::{Worker, WorkerError};
