//! What the node enforces on every request: MCP keys, the IP allow-list, allowed origins, and
//! the blocked/disabled lists. Replaced atomically as a whole when the control plane pushes a
//! new policy, so a request sees either the old one or the new one, never a mix.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;
pub use ramen_node_contract::{PolicyConfig, PolicyError};
use ramen_node_contract::{key_digest, parse_key_hash, parse_net};
use subtle::ConstantTimeEq;

/// The key of `Authorization: Bearer <key>`.
fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization.and_then(|v| v.strip_prefix("Bearer ")).map(str::trim)
}

/// The compiled policy the request path reads.
#[derive(Debug, Default)]
pub struct Policy {
    pub require_key: bool,
    key_hashes: Vec<[u8; 32]>,
    allow: Vec<IpNet>,
    trusted_proxies: Vec<IpNet>,
    blocked: HashSet<String>,
    disabled: HashSet<String>,
    allowed_origins: HashSet<String>,
    pub verbose: bool,
    pub source: PolicyConfig,
}

fn parse_nets(list: &[String]) -> Result<Vec<IpNet>, PolicyError> {
    list.iter().map(|s| parse_net(s)).collect()
}

impl Policy {
    pub fn compile(config: PolicyConfig) -> Result<Self, PolicyError> {
        let key_hashes =
            config.key_hashes.iter().map(|h| parse_key_hash(h)).collect::<Result<_, _>>()?;
        Ok(Self {
            require_key: config.require_key,
            key_hashes,
            allow: parse_nets(&config.ip_allow)?,
            trusted_proxies: parse_nets(&config.trusted_proxies)?,
            blocked: config.blocked.iter().map(|s| s.trim().to_owned()).collect(),
            disabled: config.disabled_packages.iter().map(|s| s.trim().to_owned()).collect(),
            allowed_origins: config
                .allowed_origins
                .iter()
                .map(|s| s.trim_end_matches('/').to_owned())
                .collect(),
            verbose: config.verbose,
            source: config,
        })
    }

    /// Whether `Authorization: Bearer <key>` names a valid key (constant-time per hash).
    pub fn key_ok(&self, authorization: Option<&str>) -> bool {
        if !self.require_key {
            return true;
        }
        let Some(key) = bearer(authorization) else {
            return false;
        };
        let digest = key_digest(key);
        self.key_hashes.iter().fold(false, |found, h| found | bool::from(h.ct_eq(&digest)))
    }

    /// Whose session an `initialize` opens, for the per-key cap: a digest of the caller's MCP
    /// key (`key_ok` has passed), or nobody when this node takes calls without keys.
    pub fn session_owner(&self, authorization: Option<&str>) -> String {
        match (self.require_key, bearer(authorization)) {
            (true, Some(key)) => hex::encode(&key_digest(key)[..12]),
            _ => String::new(),
        }
    }

    /// The caller's address by the rule the edge and the REST API share
    /// ([`ramen_client_addr`]): the socket peer, or — only when the peer is a trusted proxy —
    /// the right-most entry of every `X-Forwarded-For` line that is not itself trusted. A
    /// malformed entry where the client should be is an error (answered 400).
    pub fn client_ip(
        &self,
        peer: IpAddr,
        headers: &http::HeaderMap,
    ) -> Result<IpAddr, ramen_client_addr::ClientAddrError> {
        ramen_client_addr::client_ip(peer, headers, &self.trusted_proxies)
    }

    pub fn ip_ok(&self, client: IpAddr) -> bool {
        self.allow.is_empty()
            || self.allow.iter().any(|n| n.contains(&ramen_client_addr::canonical(client)))
    }

    /// Browsers send `Origin`; non-browser clients send none. A browser origin passes when it
    /// is explicitly allowed, or same-origin on a loopback host (a local tool's own page).
    /// Same-origin alone proves nothing: under DNS rebinding the attacker's page at
    /// `evil.example` (resolved to this node) is same-origin with the `Host` it makes the
    /// browser send, so only a loopback name shows the page is really local.
    pub fn origin_ok(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        let Some(origin) = origin else { return true };
        let origin = origin.trim_end_matches('/');
        if self.allowed_origins.contains(origin) {
            return true;
        }
        let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        host.is_some_and(|h| h.eq_ignore_ascii_case(origin_host) && is_loopback_host(h))
    }

    /// Whether the package is blocked on the environment or disabled on this zone.
    pub fn package_hidden(&self, package: &str) -> bool {
        self.blocked.contains(package) || self.disabled.contains(package)
    }

    /// Whether a tool is hidden: its package is, or the tool itself is blocked.
    pub fn tool_hidden(&self, package: &str, tool: &str) -> bool {
        self.package_hidden(package) || self.blocked.contains(tool)
    }
}

/// Whether a `Host` value (`name[:port]`, IPv6 in brackets) names the loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(ip, _)| ip),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests;
