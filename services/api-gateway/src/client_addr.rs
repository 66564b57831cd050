//! The client's address, for per-address rate limits and audit: the rule the edge and the
//! nodes share ([`ramen_client_addr`]), with the gateway's `gateway.trusted_proxies`.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use crate::error::ApiError;

pub fn parse_proxies(list: &[String]) -> Result<Vec<IpNet>, String> {
    ramen_client_addr::parse_trusted("gateway.trusted_proxies", list)
}

/// The client address of a request (the socket peer comes from axum's `ConnectInfo`); a
/// malformed `X-Forwarded-For` entry where the client should be is a 400.
pub fn from_parts(
    parts: &axum::http::request::Parts,
    gateway: &crate::state::Gateway,
) -> Result<IpAddr, ApiError> {
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)), |c| c.0);
    ramen_client_addr::client_ip(peer.ip(), &parts.headers, &gateway.settings().trusted_proxies)
        .map_err(|e| ApiError::invalid(e.to_string()))
}
