//! Token-bucket arithmetic and argument checks, shared by the adapters so they agree. The
//! Redis adapter runs the same arithmetic in Lua (`redis/token_bucket.lua`).

use std::time::Duration;

use crate::StateError;

/// Longest key accepted, in bytes (rate-limit keys embed a client address or key id).
pub const MAX_KEY_BYTES: usize = 1024;

/// A token bucket: holds up to `capacity` tokens, refilled continuously at `refill_per_sec`.
/// A new (or long idle) bucket is full.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketSpec {
    pub capacity: u32,
    pub refill_per_sec: f64,
}

impl BucketSpec {
    pub fn new(capacity: u32, refill_per_sec: f64) -> Self {
        Self { capacity, refill_per_sec }
    }

    /// `cost` may be 0 (a look without taking) but never above `capacity`, which could never
    /// be granted.
    pub(crate) fn check(&self, cost: u32) -> Result<(), StateError> {
        if self.capacity == 0 {
            return Err(StateError::InvalidArgument("bucket capacity must be at least 1".into()));
        }
        if !(self.refill_per_sec.is_finite() && self.refill_per_sec > 0.0) {
            return Err(StateError::InvalidArgument(format!(
                "bucket refill_per_sec must be a positive number, got {}",
                self.refill_per_sec
            )));
        }
        if cost > self.capacity {
            return Err(StateError::InvalidArgument(format!(
                "cost {cost} exceeds the bucket capacity {}",
                self.capacity
            )));
        }
        Ok(())
    }

    /// How long until a bucket holding `tokens` is full again (then it can be forgotten).
    pub(crate) fn time_to_full(&self, tokens: f64) -> Duration {
        let missing = (f64::from(self.capacity) - tokens).max(0.0);
        Duration::from_secs_f64(missing / self.refill_per_sec)
    }
}

/// The answer to [`crate::SharedState::take_tokens`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// Whole tokens left after this call.
    pub remaining: u32,
    /// When refused, how long until `cost` tokens will be there; zero when allowed.
    pub retry_after: Duration,
}

/// Refills a bucket holding `tokens` after `elapsed`, then takes `cost` if it can. Returns the
/// decision and the tokens left.
pub(crate) fn take(
    spec: BucketSpec,
    tokens: f64,
    elapsed: Duration,
    cost: u32,
) -> (RateDecision, f64) {
    let capacity = f64::from(spec.capacity);
    let tokens = (tokens + elapsed.as_secs_f64() * spec.refill_per_sec).min(capacity);
    let cost = f64::from(cost);
    if tokens >= cost {
        let left = tokens - cost;
        let decision =
            RateDecision { allowed: true, remaining: left as u32, retry_after: Duration::ZERO };
        (decision, left)
    } else {
        let wait_ms = ((cost - tokens) * 1000.0 / spec.refill_per_sec).ceil();
        let retry_after = Duration::from_millis(wait_ms as u64);
        (RateDecision { allowed: false, remaining: tokens as u32, retry_after }, tokens)
    }
}

pub(crate) fn check_key(key: &str) -> Result<(), StateError> {
    if key.is_empty() {
        return Err(StateError::InvalidArgument("key is empty".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(StateError::InvalidArgument(format!(
            "key is {} bytes, above the {MAX_KEY_BYTES}-byte limit",
            key.len()
        )));
    }
    Ok(())
}

/// TTLs are kept in whole milliseconds (Redis `PX`), so anything below 1 ms is refused.
pub(crate) fn check_ttl(ttl: Duration) -> Result<u64, StateError> {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(StateError::InvalidArgument(format!("ttl {ttl:?} is below 1 ms")));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_bucket_grants_until_empty_then_names_the_wait() {
        let spec = BucketSpec::new(3, 2.0);
        let (first, left) = take(spec, 3.0, Duration::ZERO, 3);
        assert!(first.allowed && first.remaining == 0 && left == 0.0);
        let (refused, _) = take(spec, 0.0, Duration::ZERO, 1);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after, Duration::from_millis(500));
        let (refilled, _) = take(spec, 0.0, Duration::from_secs(10), 1);
        assert!(refilled.allowed && refilled.remaining == 2, "refill is capped at capacity");
    }

    #[test]
    fn bad_specs_and_arguments_are_refused() {
        assert!(BucketSpec::new(0, 1.0).check(0).is_err());
        assert!(BucketSpec::new(1, 0.0).check(1).is_err());
        assert!(BucketSpec::new(1, f64::NAN).check(1).is_err());
        assert!(BucketSpec::new(2, 1.0).check(3).is_err());
        assert!(check_key("").is_err());
        assert!(check_ttl(Duration::from_micros(999)).is_err());
        assert_eq!(check_ttl(Duration::from_secs(2)).unwrap(), 2000);
    }
}
