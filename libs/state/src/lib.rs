//! The shared-state port: state that api-gateway replicas must share — rate-limit token
//! buckets and short-lived keys (OAuth/CSRF state, one-time tokens).
//!
//! Adapters: [`RedisState`] (Redis/Valkey, URL or Sentinel, every call bounded by a short
//! timeout), [`MemoryState`] (one replica) and [`Degrading`] (Redis, falling back to memory
//! while Redis is unavailable). [`open`] picks from the configuration. One conformance suite
//! (`tests/conformance.rs`) runs against each.

mod bucket;
mod degrading;
mod error;
mod memory;
mod redis;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub use bucket::{BucketSpec, MAX_KEY_BYTES, RateDecision};
pub use degrading::{DEFAULT_PROBE_INTERVAL, DEFAULT_WARN_INTERVAL, Degrading};
pub use error::StateError;
pub use memory::{DEFAULT_SWEEP_INTERVAL, MemoryState};
pub use redis::{DEFAULT_TIMEOUT, RedisSettings, RedisState, RedisTarget};

/// Object-safe: services hold an `Arc<dyn SharedState>` from [`open`]. Bucket keys and value
/// keys live in separate namespaces, so the same string may name both.
///
/// A call that failed with [`StateError::Unavailable`] may still have taken effect: a command
/// already sent to a stalled server runs when the server wakes up. Callers treat such a
/// failure as "unknown", never as "did not happen".
#[async_trait]
pub trait SharedState: Send + Sync + 'static {
    /// Atomically refills the bucket at `key` and takes `cost` tokens if it holds that many.
    async fn take_tokens(
        &self,
        key: &str,
        spec: BucketSpec,
        cost: u32,
    ) -> Result<RateDecision, StateError>;

    /// Stores `value` for `ttl`, replacing any previous value.
    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result<(), StateError>;

    /// Stores `value` only when `key` holds nothing; true when it was stored.
    async fn set_if_absent(
        &self,
        key: &str,
        value: Bytes,
        ttl: Duration,
    ) -> Result<bool, StateError>;

    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError>;

    /// Gets and deletes atomically: of concurrent takers exactly one gets the value (one-time
    /// tokens, OAuth state).
    async fn take(&self, key: &str) -> Result<Option<Bytes>, StateError>;

    /// Removes the value; removing a missing key succeeds.
    async fn delete(&self, key: &str) -> Result<(), StateError>;

    async fn ping(&self) -> Result<(), StateError>;

    /// True while a degrading adapter answers from its fallback (for metrics and `/readyz`
    /// details).
    fn is_degraded(&self) -> bool {
        false
    }
}

/// Memory when no Redis is configured (correct for one replica); otherwise Redis wrapped in
/// [`Degrading`]. An unreachable Redis does not fail this: calls degrade until it answers.
pub async fn open(config: &ramen_config::RedisConfig) -> Result<Arc<dyn SharedState>, StateError> {
    if !config.is_configured() {
        return Ok(Arc::new(MemoryState::new()));
    }
    let redis = RedisState::connect(RedisSettings::from_config(config)?).await?;
    Ok(Arc::new(Degrading::new(Arc::new(redis))))
}
