//! Redis first, memory when Redis is unavailable: rate limits keep working (per replica)
//! through an outage and no request waits longer than one call's bound.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;

use crate::{BucketSpec, MemoryState, RateDecision, SharedState, StateError};

/// While degraded, the primary is tried again at most this often; calls in between go
/// straight to memory instead of each paying the primary's timeout.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// At most one warning per this interval while the primary stays down.
pub const DEFAULT_WARN_INTERVAL: Duration = Duration::from_secs(30);

type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T, StateError>> + Send + 'a>>;

pub struct Degrading {
    primary: Arc<dyn SharedState>,
    fallback: MemoryState,
    probe_interval: Duration,
    warn_interval: Duration,
    degraded: AtomicBool,
    health: Mutex<Health>,
}

#[derive(Default)]
struct Health {
    next_probe: Option<Instant>,
    last_warning: Option<Instant>,
}

impl Degrading {
    pub fn new(primary: Arc<dyn SharedState>) -> Self {
        Self {
            primary,
            fallback: MemoryState::new(),
            probe_interval: DEFAULT_PROBE_INTERVAL,
            warn_interval: DEFAULT_WARN_INTERVAL,
            degraded: AtomicBool::new(false),
            health: Mutex::new(Health::default()),
        }
    }

    pub fn with_intervals(mut self, probe: Duration, warn: Duration) -> Self {
        self.probe_interval = probe;
        self.warn_interval = warn;
        self
    }

    /// True while calls are answered from memory.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    async fn route<'a, T>(
        &self,
        op: &'static str,
        primary: impl FnOnce() -> Call<'a, T>,
        fallback: impl FnOnce() -> Call<'a, T>,
    ) -> Result<T, StateError> {
        if self.skip_primary() {
            return fallback().await;
        }
        match primary().await {
            Ok(value) => {
                self.recovered();
                Ok(value)
            }
            // A call that is wrong stays wrong on the fallback; anything from the backend
            // (down, slow, refusing) is served from memory.
            Err(StateError::InvalidArgument(reason)) => Err(StateError::InvalidArgument(reason)),
            Err(error) => {
                self.failed(op, &error);
                fallback().await
            }
        }
    }

    fn skip_primary(&self) -> bool {
        self.is_degraded() && self.health.lock().next_probe.is_some_and(|at| Instant::now() < at)
    }

    fn recovered(&self) {
        if self.degraded.swap(false, Ordering::Relaxed) {
            self.health.lock().next_probe = None;
            tracing::info!("shared state: primary answers again; leaving in-memory fallback");
        }
    }

    fn failed(&self, op: &'static str, error: &StateError) {
        self.degraded.store(true, Ordering::Relaxed);
        let now = Instant::now();
        let mut health = self.health.lock();
        health.next_probe = Some(now + self.probe_interval);
        if health.last_warning.is_none_or(|at| now.duration_since(at) >= self.warn_interval) {
            health.last_warning = Some(now);
            tracing::warn!(
                op,
                %error,
                "shared state: primary unavailable; answering from memory (per replica)"
            );
        }
    }
}

#[async_trait]
impl SharedState for Degrading {
    async fn take_tokens(
        &self,
        key: &str,
        spec: BucketSpec,
        cost: u32,
    ) -> Result<RateDecision, StateError> {
        let (primary, fallback) = (&self.primary, &self.fallback);
        self.route(
            "take_tokens",
            || primary.take_tokens(key, spec, cost),
            || fallback.take_tokens(key, spec, cost),
        )
        .await
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result<(), StateError> {
        let (primary, fallback, copy) = (&self.primary, &self.fallback, value.clone());
        self.route("set", || primary.set(key, value, ttl), || fallback.set(key, copy, ttl)).await
    }

    async fn set_if_absent(
        &self,
        key: &str,
        value: Bytes,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let (primary, fallback, copy) = (&self.primary, &self.fallback, value.clone());
        self.route(
            "set_if_absent",
            || primary.set_if_absent(key, value, ttl),
            || fallback.set_if_absent(key, copy, ttl),
        )
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        self.route("get", || self.primary.get(key), || self.fallback.get(key)).await
    }

    async fn take(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        self.route("take", || self.primary.take(key), || self.fallback.take(key)).await
    }

    async fn delete(&self, key: &str) -> Result<(), StateError> {
        self.route("delete", || self.primary.delete(key), || self.fallback.delete(key)).await
    }

    /// Answers while the fallback serves, so `/readyz` does not take every replica out of
    /// the load balancer during a Redis outage; [`SharedState::is_degraded`] tells.
    async fn ping(&self) -> Result<(), StateError> {
        self.route("ping", || self.primary.ping(), || self.fallback.ping()).await
    }

    fn is_degraded(&self) -> bool {
        Degrading::is_degraded(self)
    }
}
