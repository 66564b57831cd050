//! The policy a node enforces, as written in its config or pushed live by the control plane.
//! The node compiles it (`ramen-runner`'s `Policy`); the checks here are the ones both sides
//! apply, so a provider never writes a policy the node would refuse.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// The policy as configured (node config file, or `UpdatePolicy` from the control plane).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PolicyConfig {
    /// Grows with every change pushed by the control plane; an older update is ignored.
    pub version: u64,
    /// Off only for fixtures such as the conformance run, which cannot send headers.
    pub require_key: bool,
    /// Lowercase hex SHA-256 of each valid MCP key ([`crate::key_hash`]).
    pub key_hashes: Vec<String>,
    /// CIDRs allowed to call; empty allows every source.
    pub ip_allow: Vec<String>,
    /// Peers whose `X-Forwarded-For` is believed (the edge, a load balancer).
    pub trusted_proxies: Vec<String>,
    /// Entries naming a package (all its tools, resources and prompts) or one tool.
    pub blocked: Vec<String>,
    /// Packages disabled on this zone.
    pub disabled_packages: Vec<String>,
    /// `Origin` values browsers may call from (besides same-origin).
    pub allowed_origins: Vec<String>,
    pub verbose: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PolicyError {
    #[error("`{0}` is not a CIDR (e.g. 10.0.0.0/8 or 2001:db8::/32)")]
    BadCidr(String),
    #[error("key hash `{0}` is not 64 hex characters (SHA-256)")]
    BadKeyHash(String),
}

impl PolicyConfig {
    /// Every CIDR and key hash parses.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for net in self.ip_allow.iter().chain(&self.trusted_proxies) {
            parse_net(net)?;
        }
        for hash in &self.key_hashes {
            parse_key_hash(hash)?;
        }
        Ok(())
    }
}

/// A CIDR, or a bare address as its one-address network.
pub fn parse_net(text: &str) -> Result<IpNet, PolicyError> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| PolicyError::BadCidr(text.to_owned()))
}

/// A stored key hash as its 32 bytes.
pub fn parse_key_hash(hash: &str) -> Result<[u8; 32], PolicyError> {
    let bytes = hex::decode(hash.trim()).map_err(|_| PolicyError::BadKeyHash(hash.to_owned()))?;
    bytes.try_into().map_err(|_| PolicyError::BadKeyHash(hash.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_bad_entry() {
        let bad_net = PolicyConfig { ip_allow: vec!["10.0.0.0/33".into()], ..Default::default() };
        assert_eq!(bad_net.validate(), Err(PolicyError::BadCidr("10.0.0.0/33".into())));
        let bad_hash = PolicyConfig { key_hashes: vec!["abc".into()], ..Default::default() };
        assert_eq!(bad_hash.validate(), Err(PolicyError::BadKeyHash("abc".into())));
        let good = PolicyConfig {
            ip_allow: vec!["10.0.0.0/8".into(), "192.0.2.7".into()],
            key_hashes: vec![crate::key_hash("k")],
            ..Default::default()
        };
        assert_eq!(good.validate(), Ok(()));
    }
}
