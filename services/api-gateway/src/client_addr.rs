//! The client's address, for per-address rate limits: the socket peer, unless the peer is a
//! trusted proxy (the load balancer), in which case the right-most `X-Forwarded-For` entry that
//! is not itself a trusted proxy. Entries a client wrote further left are never believed.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

pub fn parse_proxies(list: &[String]) -> Result<Vec<IpNet>, String> {
    list.iter()
        .map(|s| {
            let s = s.trim();
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("gateway.trusted_proxies: `{s}` is not a CIDR or an address"))
        })
        .collect()
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let peer = canonical(peer.ip());
    if !is_trusted(&peer) {
        return peer;
    }
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
        .map(canonical)
        .collect();
    hops.into_iter().rev().find(|ip| !is_trusted(ip)).unwrap_or(peer)
}

/// The client address of a request (the socket peer comes from axum's `ConnectInfo`).
pub fn from_parts(parts: &axum::http::request::Parts, gateway: &crate::state::Gateway) -> IpAddr {
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)), |c| c.0);
    client_ip(peer, &parts.headers, &gateway.settings().trusted_proxies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", xff.parse().unwrap());
        headers
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let trusted = parse_proxies(&["10.0.0.0/8".into()]).unwrap();
        let lb: SocketAddr = "10.1.2.3:5000".parse().unwrap();
        let stranger: SocketAddr = "203.0.113.9:5000".parse().unwrap();
        let spoofed = headers("1.1.1.1, 198.51.100.7, 10.0.0.5");
        assert_eq!(client_ip(lb, &spoofed, &trusted).to_string(), "198.51.100.7");
        assert_eq!(client_ip(stranger, &spoofed, &trusted).to_string(), "203.0.113.9");
        assert_eq!(client_ip(lb, &HeaderMap::new(), &trusted).to_string(), "10.1.2.3");
        let mapped: SocketAddr = "[::ffff:203.0.113.9]:1".parse().unwrap();
        assert_eq!(client_ip(mapped, &HeaderMap::new(), &[]).to_string(), "203.0.113.9");
        assert!(parse_proxies(&["nope".into()]).unwrap_err().contains("nope"));
    }
}
