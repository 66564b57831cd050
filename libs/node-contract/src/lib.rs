//! The contract between the control plane and a worker node (`ramen-runner`): what a zone
//! provider writes for a node to run ([`NodeConfig`], with its [`PolicyConfig`] and
//! [`SnapshotRef`]), what the node reports back once it listens ([`NodePorts`]), the
//! snapshot archive format both sides build and read ([`archive`]), what a repo tree may hold
//! and how it is read ([`tree`]: links stay inside, reads are bounded), the one rule by which
//! an MCP key is stored and checked ([`key_hash`]), and the key a node verifies the control
//! plane's calls with ([`TicketKey`]).
//!
//! It is a library of its own so that neither side links the other: the deployer packs
//! snapshots and auth hashes keys without the node's code, and the zone-manager writes node
//! configs without depending on the runner crate.

pub mod archive;
mod config;
pub mod egress;
pub mod environment;
mod policy;
mod ports;
mod ticket_key;
pub mod tree;

use sha2::{Digest, Sha256};

pub use config::{
    BIND_HOST_VAR, BlobConfig, EnvironmentRef, NODE_ID_VAR, NodeConfig, NodeConfigError,
    NodeCredentials, POLICY_FILE_VAR, SandboxConfig, SnapshotRef, WORKDIR_VAR, read_policy,
};
pub use policy::{NodeAuth, NodeKey, PolicyConfig, PolicyError, parse_key_hash, parse_net};
pub use ports::NodePorts;
pub use ticket_key::TicketKey;

/// How an MCP key is stored (auth) and compared (the node): lowercase hex SHA-256 of the key.
/// Keys are 256-bit random tokens, so a fast hash is enough; what matters is that both sides
/// use this one function.
pub fn key_hash(key: &str) -> String {
    hex::encode(key_digest(key))
}

/// The raw digest [`key_hash`] encodes (the node compares these in constant time).
pub fn key_digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn key_hash_is_lowercase_hex_sha256() {
        assert_eq!(
            super::key_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(super::key_digest("abc").to_vec(), hex::decode(super::key_hash("abc")).unwrap());
    }
}
