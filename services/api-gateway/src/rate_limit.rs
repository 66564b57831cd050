//! Login and refresh rate limits: token buckets in the shared-state port, so every gateway
//! replica draws from the same buckets when Redis is configured (memory otherwise, per
//! replica). A Redis outage degrades: the port answers from memory, and each call here is
//! also bounded, so a stalled state backend can slow a request by at most that bound.
//!
//! Sign-in is limited per (source, account) and per source across accounts — never per account
//! alone: a bucket anyone can empty from anywhere would let anyone lock any account out (a
//! super admin's included). An attacker's address runs dry on the accounts it guesses; the
//! owner, signing in from elsewhere, draws on buckets the attacker never touched. A source is
//! an IPv4 address or an IPv6 /64 (one site's allocation: per address, an attacker holding a
//! /64 would have 2^64 budgets).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ramen_state::{BucketSpec, SharedState};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::settings::RateLimits;

pub struct RateLimiter {
    state: Arc<dyn SharedState>,
    limits: RateLimits,
    bound: Duration,
}

/// The source attempts are counted against: the address, or its /64 for IPv6.
fn source(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                format!("{}/64", std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

/// Keys hash what they name, so no email or token sits in Redis in clear.
fn digest(value: &str) -> String {
    hex::encode(&Sha256::digest(value.as_bytes())[..16])
}

impl RateLimiter {
    pub fn new(state: Arc<dyn SharedState>, limits: RateLimits, bound: Duration) -> Self {
        Self { state, limits, bound }
    }

    /// The (source, account) bucket is taken first, so attempts it refuses do not also spend
    /// the source's budget for other accounts.
    pub async fn login(&self, email: &str, addr: IpAddr) -> Result<(), ApiError> {
        let account = digest(&email.trim().to_ascii_lowercase());
        let source = source(addr);
        self.take(&[
            (format!("rl:login:pair:{source}:{account}"), self.limits.per_source_account),
            (format!("rl:login:addr:{source}"), self.limits.login_per_address),
        ])
        .await
    }

    pub async fn refresh(&self, refresh_token: &str, addr: IpAddr) -> Result<(), ApiError> {
        self.take(&[
            (format!("rl:refresh:addr:{}", source(addr)), self.limits.refresh_per_address),
            (
                format!("rl:refresh:session:{}", digest(refresh_token.trim())),
                self.limits.refresh_per_session,
            ),
        ])
        .await
    }

    /// Single sign-on starts (each keeps a flow in the store) and CLI code redemptions, per
    /// source, on the sign-in budget of that source.
    pub async fn sso(&self, addr: IpAddr) -> Result<(), ApiError> {
        let source = source(addr);
        self.take(&[(format!("rl:sso:addr:{source}"), self.limits.login_per_address)]).await
    }

    /// Password changes check the current password, so they count as login attempts of the
    /// account from that source.
    pub async fn password_change(&self, email: &str, addr: IpAddr) -> Result<(), ApiError> {
        self.login(email, addr).await
    }

    async fn take(&self, buckets: &[(String, BucketSpec)]) -> Result<(), ApiError> {
        for (key, spec) in buckets {
            match tokio::time::timeout(self.bound, self.state.take_tokens(key, *spec, 1)).await {
                Ok(Ok(decision)) if !decision.allowed => {
                    return Err(ApiError::rate_limited(decision.retry_after));
                }
                Ok(Ok(_)) => {}
                // Fail open: refusing every login because the limiter is down would turn a
                // state outage into a full outage. The port's memory fallback keeps limiting.
                Ok(Err(error)) => {
                    tracing::warn!(%error, "rate limit unavailable; letting the request through")
                }
                Err(_) => {
                    tracing::warn!(bound = ?self.bound, "rate limit timed out; letting the request through")
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::source;

    #[test]
    fn a_source_is_an_ipv4_address_or_an_ipv6_64() {
        let of = |s: &str| source(s.parse().unwrap());
        assert_eq!(of("198.51.100.7"), "198.51.100.7");
        assert_eq!(of("::ffff:198.51.100.7"), "198.51.100.7");
        assert_eq!(of("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(of("2001:db8:1:2:ffff:1:2:3"), of("2001:db8:1:2::9"));
        assert_ne!(of("2001:db8:1:3::1"), of("2001:db8:1:2::1"));
    }
}
