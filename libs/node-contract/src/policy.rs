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
    /// The MCP keys the node accepts, each with its expiry: the node checks it on every
    /// request, so a key stops working when it expires, not when a policy is next pushed.
    pub key_hashes: Vec<NodeKey>,
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
    /// How callers authenticate and what each may call (the environment's setting). The
    /// default — keys, no rules — is what every node enforced before OAuth.
    pub auth: NodeAuth,
    /// The environment the placement serves (its last deploy's), named by every call record.
    pub environment: String,
    /// Whether call records keep each call's arguments (redacted).
    pub record_arguments: bool,
}

/// An environment's MCP authentication as a node enforces it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct NodeAuth {
    pub mode: ramen_call_rules::AuthMode,
    /// The URL access tokens must name as their audience (RFC 8707), also the `resource` of
    /// the protected resource metadata.
    pub resource: String,
    /// Authorization servers whose tokens count.
    pub issuers: Vec<String>,
    /// Scopes of which a token must hold one (empty: any).
    pub scopes: Vec<String>,
    pub rules: Vec<ramen_call_rules::Rule>,
}

impl NodeAuth {
    /// The wire form (`NodePolicy.auth`, resolved by the deployer) as a node takes it; unset
    /// is MCP keys only, no rules.
    pub fn from_wire(auth: Option<&ramen_proto::common::v1::McpAuth>) -> Self {
        use ramen_proto::common::v1::McpAuthMode;
        let Some(auth) = auth else { return Self::default() };
        let mode = match auth.mode() {
            McpAuthMode::Oauth => ramen_call_rules::AuthMode::Oauth,
            McpAuthMode::Both => ramen_call_rules::AuthMode::Both,
            McpAuthMode::Keys | McpAuthMode::Unspecified => ramen_call_rules::AuthMode::Keys,
        };
        Self {
            mode,
            resource: auth.resource.clone(),
            issuers: auth.issuers.clone(),
            scopes: auth.scopes.clone(),
            rules: auth
                .rules
                .iter()
                .map(|r| ramen_call_rules::Rule {
                    subjects: r.subjects.clone(),
                    groups: r.groups.clone(),
                    roles: r.roles.clone(),
                    scopes: r.scopes.clone(),
                    keys: r.keys.clone(),
                    allow: r.allow.clone(),
                })
                .collect(),
        }
    }
}

impl From<ramen_proto::common::v1::KeyHash> for NodeKey {
    fn from(key: ramen_proto::common::v1::KeyHash) -> Self {
        Self::new(key.sha256_hex, key.expires_at_unix_ms).named(key.key_id, key.key_name)
    }
}

/// One MCP key a node accepts. Written in a config or policy file as an object, or as a bare
/// hash (a key that never expires, as configs before expiries travelled read).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(from = "NodeKeyText")]
pub struct NodeKey {
    /// Lowercase hex SHA-256 of the key ([`crate::key_hash`]).
    pub sha256_hex: String,
    /// Unix milliseconds from which the key is refused; 0 = never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expires_at_unix_ms: i64,
    /// Auth's id of the key, and its name: for rules naming keys, and for the tools it calls.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

impl NodeKey {
    pub fn new(sha256_hex: impl Into<String>, expires_at_unix_ms: i64) -> Self {
        Self {
            sha256_hex: sha256_hex.into(),
            expires_at_unix_ms,
            id: String::new(),
            name: String::new(),
        }
    }

    /// The key with auth's id and name for it.
    pub fn named(mut self, id: impl Into<String>, name: impl Into<String>) -> Self {
        self.id = id.into();
        self.name = name.into();
        self
    }

    /// Whether the key is refused at `now_unix_ms`.
    pub fn expired_at(&self, now_unix_ms: i64) -> bool {
        self.expires_at_unix_ms != 0 && now_unix_ms >= self.expires_at_unix_ms
    }
}

/// A key that never expires.
impl From<String> for NodeKey {
    fn from(sha256_hex: String) -> Self {
        Self::new(sha256_hex, 0)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NodeKeyText {
    Hash(String),
    Key {
        sha256_hex: String,
        #[serde(default)]
        expires_at_unix_ms: i64,
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
    },
}

impl From<NodeKeyText> for NodeKey {
    fn from(text: NodeKeyText) -> Self {
        match text {
            NodeKeyText::Hash(hash) => Self::new(hash, 0),
            NodeKeyText::Key { sha256_hex, expires_at_unix_ms, id, name } => {
                Self::new(sha256_hex, expires_at_unix_ms).named(id, name)
            }
        }
    }
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
        for key in &self.key_hashes {
            parse_key_hash(&key.sha256_hex)?;
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
        let bad_hash =
            PolicyConfig { key_hashes: vec![String::from("abc").into()], ..Default::default() };
        assert_eq!(bad_hash.validate(), Err(PolicyError::BadKeyHash("abc".into())));
        let good = PolicyConfig {
            ip_allow: vec!["10.0.0.0/8".into(), "192.0.2.7".into()],
            key_hashes: vec![crate::key_hash("k").into()],
            ..Default::default()
        };
        assert_eq!(good.validate(), Ok(()));
    }

    #[test]
    fn keys_carry_their_expiry_and_bare_hashes_still_read() {
        let hash = crate::key_hash("k");
        let text = format!(
            r#"{{"key_hashes": ["{hash}", {{"sha256_hex": "{hash}", "expires_at_unix_ms": 1000}}]}}"#
        );
        let config: PolicyConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(config.key_hashes, [NodeKey::new(&hash, 0), NodeKey::new(&hash, 1000)]);
        let round: PolicyConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(round, config);
        let expiring = &config.key_hashes[1];
        assert!(!expiring.expired_at(999) && expiring.expired_at(1000));
        assert!(!config.key_hashes[0].expired_at(i64::MAX), "0 never expires");
    }
}
