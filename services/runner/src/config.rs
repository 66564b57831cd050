//! The node's configuration is the control plane's contract with the node; it lives in
//! `ramen-node-contract` so providers write it without linking the node.

pub use ramen_node_contract::{BlobConfig, NodeConfig, NodeConfigError, SnapshotRef};
