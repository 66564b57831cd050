//! Login and refresh rate limits: token buckets in the shared-state port, so every gateway
//! replica draws from the same buckets when Redis is configured (memory otherwise, per
//! replica). A Redis outage degrades: the port answers from memory, and each call here is
//! also bounded, so a stalled state backend can slow a request by at most that bound.

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

/// Keys hash what they name, so no email or token sits in Redis in clear.
fn digest(value: &str) -> String {
    hex::encode(&Sha256::digest(value.as_bytes())[..16])
}

impl RateLimiter {
    pub fn new(state: Arc<dyn SharedState>, limits: RateLimits, bound: Duration) -> Self {
        Self { state, limits, bound }
    }

    pub async fn login(&self, email: &str, addr: IpAddr) -> Result<(), ApiError> {
        let account = digest(&email.trim().to_ascii_lowercase());
        self.take(&[
            (format!("rl:login:addr:{addr}"), self.limits.login_per_address),
            (format!("rl:account:{account}"), self.limits.per_account),
        ])
        .await
    }

    pub async fn refresh(&self, refresh_token: &str, addr: IpAddr) -> Result<(), ApiError> {
        self.take(&[
            (format!("rl:refresh:addr:{addr}"), self.limits.refresh_per_address),
            (
                format!("rl:refresh:session:{}", digest(refresh_token.trim())),
                self.limits.refresh_per_session,
            ),
        ])
        .await
    }

    /// Password changes check the current password, so they count as login attempts.
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
