//! In-process state: correct for a single replica (`ramen up`, tests) and the fallback of
//! [`crate::Degrading`]. Expired entries are dropped lazily on access and by a periodic sweep.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::bucket::{self, BucketSpec, RateDecision, check_key, check_ttl};
use crate::{SharedState, StateError};

/// How often the sweep drops expired entries nobody asked for again.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(30);

pub struct MemoryState {
    maps: Arc<Mutex<Maps>>,
    sweeper: Option<Sweeper>,
}

#[derive(Default)]
struct Maps {
    buckets: HashMap<String, Bucket>,
    values: HashMap<String, Entry>,
}

struct Bucket {
    tokens: f64,
    updated: Instant,
    /// From then on the bucket is full, which is the same as absent.
    full_at: Instant,
}

struct Entry {
    value: Bytes,
    expires: Instant,
}

/// The sweep task's owner: cancelled when the state drops, awaited by [`MemoryState::close`].
struct Sweeper {
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Default for MemoryState {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryState {
    pub fn new() -> Self {
        Self::with_sweep_interval(DEFAULT_SWEEP_INTERVAL)
    }

    /// Outside a Tokio runtime there is no sweep; expiry is then only lazy.
    pub fn with_sweep_interval(interval: Duration) -> Self {
        let maps = Arc::new(Mutex::new(Maps::default()));
        let sweeper = tokio::runtime::Handle::try_current()
            .ok()
            .map(|runtime| Sweeper::start(&runtime, Arc::downgrade(&maps), interval));
        Self { maps, sweeper }
    }

    /// Stops the sweep task and waits for it.
    pub async fn close(mut self) {
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.cancel.cancel();
            if let Some(task) = sweeper.task {
                let _ = task.await;
            }
        }
    }

    /// Live entries (buckets + values), for tests and metrics.
    pub fn len(&self) -> usize {
        let maps = self.maps.lock();
        maps.buckets.len() + maps.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live value at `key`, dropping it if it has expired.
    fn live<'a>(maps: &'a mut Maps, key: &str, now: Instant) -> Option<&'a mut Entry> {
        if maps.values.get(key).is_some_and(|e| e.expires <= now) {
            maps.values.remove(key);
        }
        maps.values.get_mut(key)
    }
}

impl Drop for MemoryState {
    fn drop(&mut self) {
        if let Some(sweeper) = &self.sweeper {
            sweeper.cancel.cancel();
        }
    }
}

impl Sweeper {
    fn start(runtime: &tokio::runtime::Handle, maps: Weak<Mutex<Maps>>, every: Duration) -> Self {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let span = tracing::debug_span!("ramen_state.memory_sweep");
        let task = runtime.spawn(
            async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        _ = tick.tick() => {}
                    }
                    // The owner may be gone without a cancel (a leaked clone of the token).
                    let Some(maps) = maps.upgrade() else { break };
                    sweep(&mut maps.lock(), Instant::now());
                }
            }
            .instrument(span),
        );
        Self { cancel, task: Some(task) }
    }
}

fn sweep(maps: &mut Maps, now: Instant) {
    maps.buckets.retain(|_, b| b.full_at > now);
    maps.values.retain(|_, e| e.expires > now);
}

#[async_trait]
impl SharedState for MemoryState {
    async fn take_tokens(
        &self,
        key: &str,
        spec: BucketSpec,
        cost: u32,
    ) -> Result<RateDecision, StateError> {
        check_key(key)?;
        spec.check(cost)?;
        let now = Instant::now();
        let mut maps = self.maps.lock();
        let (tokens, elapsed) = match maps.buckets.get(key) {
            Some(b) => (b.tokens, now.saturating_duration_since(b.updated)),
            None => (f64::from(spec.capacity), Duration::ZERO),
        };
        let (decision, left) = bucket::take(spec, tokens, elapsed, cost);
        let full_at = now + spec.time_to_full(left);
        maps.buckets.insert(key.to_owned(), Bucket { tokens: left, updated: now, full_at });
        Ok(decision)
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result<(), StateError> {
        check_key(key)?;
        check_ttl(ttl)?;
        let expires = Instant::now() + ttl;
        self.maps.lock().values.insert(key.to_owned(), Entry { value, expires });
        Ok(())
    }

    async fn set_if_absent(
        &self,
        key: &str,
        value: Bytes,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        check_key(key)?;
        check_ttl(ttl)?;
        let now = Instant::now();
        let mut maps = self.maps.lock();
        if Self::live(&mut maps, key, now).is_some() {
            return Ok(false);
        }
        maps.values.insert(key.to_owned(), Entry { value, expires: now + ttl });
        Ok(true)
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        check_key(key)?;
        let mut maps = self.maps.lock();
        Ok(Self::live(&mut maps, key, Instant::now()).map(|e| e.value.clone()))
    }

    async fn take(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        check_key(key)?;
        let mut maps = self.maps.lock();
        let found = Self::live(&mut maps, key, Instant::now()).is_some();
        Ok(if found { maps.values.remove(key).map(|e| e.value) } else { None })
    }

    async fn delete(&self, key: &str) -> Result<(), StateError> {
        check_key(key)?;
        self.maps.lock().values.remove(key);
        Ok(())
    }

    async fn ping(&self) -> Result<(), StateError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
