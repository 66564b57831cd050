//! What the gateway needs from the configuration, resolved once at start (tests build their
//! own, e.g. with small rate-limit buckets).

use std::time::Duration;

use ipnet::IpNet;
use ramen_config::{Config, Mode, ServiceName};
use ramen_state::BucketSpec;

/// Token buckets of the rate limits (each key is a bucket in the shared state).
#[derive(Clone, Copy, Debug)]
pub struct RateLimits {
    /// Login and password-change attempts per account from one source (an IPv4 address or an
    /// IPv6 /64). Never per account alone, which would let anyone lock any account out.
    pub per_source_account: BucketSpec,
    /// Login attempts per source, across accounts.
    pub login_per_address: BucketSpec,
    /// Refreshes per client address.
    pub refresh_per_address: BucketSpec,
    /// Refreshes per session (refresh-token family member).
    pub refresh_per_session: BucketSpec,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_source_account: BucketSpec::new(10, 10.0 / 60.0),
            login_per_address: BucketSpec::new(30, 0.5),
            refresh_per_address: BucketSpec::new(60, 1.0),
            refresh_per_session: BucketSpec::new(10, 10.0 / 60.0),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Settings {
    /// Session cookies carry `Secure`.
    pub secure_cookies: bool,
    pub trusted_proxies: Vec<IpNet>,
    pub limits: RateLimits,
    /// Bound on one rate-limit call; past it the request goes on (the state port degrades to
    /// memory by itself, this only guarantees nothing waits longer).
    pub limit_timeout: Duration,
    /// Deadline of one gRPC call to a service.
    pub grpc_timeout: Duration,
    pub auth_endpoint: String,
    pub deployer_endpoint: String,
    pub zone_manager_endpoint: String,
    pub rebalancer_endpoint: String,
    /// How often the edge reports the MCP keys it let through to auth ("last used").
    pub key_use_report_every: Duration,
}

impl Settings {
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let gateway = &config.gateway;
        Ok(Self {
            secure_cookies: gateway.secure_cookies.unwrap_or(config.mode == Mode::Cloud),
            trusted_proxies: crate::client_addr::parse_proxies(&gateway.trusted_proxies())?,
            limits: RateLimits::default(),
            limit_timeout: config.redis.timeout * 2,
            grpc_timeout: Duration::from_secs(30),
            auth_endpoint: config.endpoint(ServiceName::Auth),
            deployer_endpoint: config.endpoint(ServiceName::Deployer),
            zone_manager_endpoint: config.endpoint(ServiceName::ZoneManager),
            rebalancer_endpoint: config.endpoint(ServiceName::Rebalancer),
            key_use_report_every: Duration::from_secs(30),
        })
    }
}
