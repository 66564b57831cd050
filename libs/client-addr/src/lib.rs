//! Who is calling: the one rule the edge, the REST API and the node share, so an address an
//! attacker can forge past one of them cannot be forged past the others.
//!
//! The socket peer is the client, unless the peer is a trusted proxy (a load balancer, the
//! edge). Then every `X-Forwarded-For` line is joined in order (proxies such as HAProxy add
//! their own line rather than extend the first), and the entries are read from the right,
//! skipping trusted hops: the first one that is not trusted is the client. Entries further
//! left were written by the client itself and are never read. An entry that is not a bare IP
//! address (`ip:port`, `unknown`, an empty item, garbage) where the client should be is
//! refused, not skipped: skipping would let whatever stands left of it — the client's own
//! words — become the address. IPv4-mapped IPv6 addresses are matched as IPv4.

use std::net::IpAddr;

use http::HeaderMap;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// Why no client address could be settled on; answered with 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientAddrError {
    #[error("X-Forwarded-For entry {entry:?} is not an IP address")]
    Malformed { entry: String },
    #[error("X-Forwarded-For is not valid text")]
    NotText,
}

/// A CIDR, or a bare address as its one-address network.
pub fn parse_net(text: &str) -> Option<IpNet> {
    let text = text.trim();
    text.parse::<IpNet>().or_else(|_| text.parse::<IpAddr>().map(IpNet::from)).ok()
}

/// Parses a list of trusted proxies (CIDRs or bare addresses), naming `key` and the bad entry.
pub fn parse_trusted(key: &str, list: &[String]) -> Result<Vec<IpNet>, String> {
    list.iter()
        .map(|s| {
            parse_net(s).ok_or_else(|| format!("{key}: `{}` is not a CIDR or an address", s.trim()))
        })
        .collect()
}

/// IPv4-mapped IPv6 addresses (dual-stack sockets, some proxies) as the IPv4 they carry.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The client address of a request that reached us from `peer`.
pub fn client_ip(
    peer: IpAddr,
    headers: &HeaderMap,
    trusted: &[IpNet],
) -> Result<IpAddr, ClientAddrError> {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let peer = canonical(peer);
    if !is_trusted(&peer) {
        return Ok(peer);
    }
    let mut lines = Vec::new();
    for value in headers.get_all(X_FORWARDED_FOR) {
        lines.push(value.to_str().map_err(|_| ClientAddrError::NotText)?);
    }
    let mut client = peer;
    // Right to left over the joined lines: the last line's last entry is the nearest hop.
    for entry in lines.iter().rev().flat_map(|line| line.rsplit(',')) {
        let entry = entry.trim();
        let ip = entry
            .parse::<IpAddr>()
            .map_err(|_| ClientAddrError::Malformed { entry: entry.to_owned() })?;
        client = canonical(ip);
        if !is_trusted(&client) {
            return Ok(client);
        }
    }
    // Every hop was trusted: the left-most one is as near the client as anyone can tell.
    Ok(client)
}

#[cfg(test)]
mod tests;
