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

/// The node's maps and sets hash with foldhash, not SipHash: several times cheaper on the
/// short keys a call looks up (session ids, key digests, tool names, the pending call's id;
/// ~1.8k instructions per `tools/call` went to SipHash). Keys such as session ids come from
/// clients, so the hasher stays randomly seeded per map, as std's is.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

pub use config::{BlobConfig, NodeConfig, SnapshotRef};
pub use policy::PolicyConfig;
pub use worker::{Worker, WorkerError};
