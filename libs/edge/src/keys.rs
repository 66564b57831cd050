//! MCP keys checked at the edge, before any node sees the request: an unknown, revoked or
//! expired key gets 401 here, as at the node. The node still checks (it may be reached
//! without the edge); this keeps refused callers off the workers and makes a revocation
//! count within [`FRESH_FOR`] everywhere the edge serves, with nothing pushed.
//!
//! The keys of an environment come from auth (`ListMcpKeyHashes`), each hash with its expiry,
//! which is compared with the clock on every request. A key not in the set asks auth once more,
//! so a key created a moment ago works on first use: the request waits until the set is
//! [`REFETCH_AFTER`] old, and the requests waiting together share one read, so a flood of
//! made-up keys costs auth one request per interval (and each of them that wait).
//!
//! Each key let through is noted (key id, time) and the notes are sent to auth in one batch per
//! [`KeyBook::spawn_use_reports`] interval (`RecordMcpKeyUse`), off the request path: the console
//! and `ramen keys list` show when each key was last used.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use ramen_access::Caller;
use ramen_clients::AuthClient;
use subtle::ConstantTimeEq;

/// How long an environment's key set is used before auth is asked again: the longest a
/// revoked key still passes the edge.
pub const FRESH_FOR: Duration = Duration::from_millis(800);
/// The least time between two reads of one environment's keys for an unknown key.
pub const REFETCH_AFTER: Duration = Duration::from_millis(250);

/// The edge's verdict on a request's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyVerdict {
    /// A live key: auth's id and name for it.
    Valid { id: String, name: String },
    /// Missing, unknown, revoked or expired: 401.
    Refused,
    /// Auth could not be asked: the node decides (it holds the keys pushed to it).
    Unknowable(String),
}

/// One live key of an environment: its SHA-256 digest, expiry (Unix ms, 0 = never), id and
/// name.
struct LiveKey {
    digest: [u8; 32],
    expires_at: i64,
    id: String,
    name: String,
}

type Keys = Arc<Vec<LiveKey>>;

/// `(group, environment)`.
type EnvironmentKey = (String, String);

struct KeySet {
    at: Instant,
    keys: Keys,
}

/// The key sets of the environments the edge serves.
pub struct KeyBook {
    auth: Arc<dyn AuthClient>,
    sets: Mutex<HashMap<EnvironmentKey, KeySet>>,
    /// Per environment, one read of auth at a time, so the requests waiting on one share its
    /// answer (and a flood on one environment delays no other).
    reading: Mutex<HashMap<EnvironmentKey, Arc<tokio::sync::Mutex<()>>>>,
    /// Keys let through since the last report: (group, key id) → Unix ms.
    used: Mutex<HashMap<(String, String), i64>>,
}

impl KeyBook {
    pub fn new(auth: Arc<dyn AuthClient>) -> Self {
        Self { auth, sets: Mutex::default(), reading: Mutex::default(), used: Mutex::default() }
    }

    /// Sends the keys used since the last report to auth every `every` (task
    /// `edge-key-use-reports` of `tasks`), and once more when the tasks are stopped. A report
    /// that fails is merged back and sent with the next.
    pub fn spawn_use_reports(
        self: &Arc<Self>,
        tasks: &ramen_lifecycle::TaskCenter,
        every: Duration,
    ) {
        let book = self.clone();
        tasks.spawn("edge-key-use-reports", move |token| async move {
            loop {
                tokio::select! {
                    _ = token.cancelled() => {
                        book.report_use().await;
                        return;
                    }
                    _ = tokio::time::sleep(every) => book.report_use().await,
                }
            }
        });
    }

    async fn report_use(&self) {
        let used = std::mem::take(&mut *self.used.lock());
        if used.is_empty() {
            return;
        }
        let uses = used
            .iter()
            .map(|((group, key_id), at)| ramen_proto::auth::v1::McpKeyUse {
                group: group.clone(),
                key_id: key_id.clone(),
                at: Some(prost_types::Timestamp {
                    seconds: at / 1000,
                    nanos: ((at % 1000) * 1_000_000) as i32,
                }),
            })
            .collect();
        let edge = Caller::acting_as(ramen_proto::metadata::ACTOR_EDGE);
        let request = ramen_proto::auth::v1::RecordMcpKeyUseRequest { uses };
        if let Err(error) = self.auth.record_mcp_key_use(&edge, request).await {
            tracing::warn!(error = %error.message, keys = used.len(), "key use not reported; sent with the next report");
            let mut pending = self.used.lock();
            for (key, at) in used {
                let slot = pending.entry(key).or_insert(at);
                *slot = (*slot).max(at);
            }
        }
    }

    /// Whether `authorization` (`Bearer <key>`) names a live key of the environment.
    pub async fn check(
        &self,
        group: &str,
        environment: &str,
        authorization: Option<&str>,
    ) -> KeyVerdict {
        let Some(key) = authorization.and_then(|v| v.strip_prefix("Bearer ")).map(str::trim) else {
            return KeyVerdict::Refused;
        };
        let digest = ramen_node_contract::key_digest(key);
        let (keys, fetched_at) = match self.keys(group, environment, None).await {
            Ok(set) => set,
            Err(reason) => return KeyVerdict::Unknowable(reason),
        };
        match find(&keys, &digest) {
            Found::Live(key) => return self.used(group, key),
            Found::Expired => return KeyVerdict::Refused,
            Found::No => {}
        }
        // Perhaps created since the set was read: ask once more, once the set is old enough.
        tokio::time::sleep(REFETCH_AFTER.saturating_sub(fetched_at.elapsed())).await;
        let keys = match self.keys(group, environment, Some(fetched_at)).await {
            Ok((keys, _)) => keys,
            Err(reason) => return KeyVerdict::Unknowable(reason),
        };
        match find(&keys, &digest) {
            Found::Live(key) => self.used(group, key),
            Found::Expired | Found::No => KeyVerdict::Refused,
        }
    }

    fn used(&self, group: &str, key: &LiveKey) -> KeyVerdict {
        self.used.lock().insert((group.to_owned(), key.id.clone()), now_ms());
        KeyVerdict::Valid { id: key.id.clone(), name: key.name.clone() }
    }

    /// The environment's key set: the cached one while it is younger than [`FRESH_FOR`] (and,
    /// with `newer_than`, read after that), else read from auth. One read per environment at a
    /// time: requests that find the set stale together share the read one of them makes.
    async fn keys(
        &self,
        group: &str,
        environment: &str,
        newer_than: Option<Instant>,
    ) -> Result<(Keys, Instant), String> {
        let key = (group.to_owned(), environment.to_owned());
        let usable = |set: &KeySet| {
            set.at.elapsed() < FRESH_FOR && newer_than.is_none_or(|then| set.at > then)
        };
        let cached = |sets: &HashMap<EnvironmentKey, KeySet>| {
            sets.get(&key).filter(|set| usable(set)).map(|set| (set.keys.clone(), set.at))
        };
        if let Some(found) = cached(&self.sets.lock()) {
            return Ok(found);
        }
        let lock = self.reading.lock().entry(key.clone()).or_default().clone();
        let _one = lock.lock().await;
        if let Some(found) = cached(&self.sets.lock()) {
            return Ok(found);
        }
        self.fetch(group, environment).await
    }

    async fn fetch(&self, group: &str, environment: &str) -> Result<(Keys, Instant), String> {
        let edge = Caller::acting_as(ramen_proto::metadata::ACTOR_EDGE);
        let hashes = self
            .auth
            .key_hashes(&edge, group, environment, "")
            .await
            .map_err(|e| format!("auth: {}", e.message))?;
        let keys: Vec<LiveKey> = hashes
            .into_iter()
            .filter_map(|k| {
                let digest: [u8; 32] = hex::decode(&k.sha256_hex).ok()?.try_into().ok()?;
                Some(LiveKey {
                    digest,
                    expires_at: k.expires_at_unix_ms,
                    id: k.key_id,
                    name: k.key_name,
                })
            })
            .collect();
        let (keys, at) = (Arc::new(keys), Instant::now());
        self.sets
            .lock()
            .insert((group.to_owned(), environment.to_owned()), KeySet { at, keys: keys.clone() });
        Ok((keys, at))
    }
}

enum Found<'k> {
    Live(&'k LiveKey),
    Expired,
    No,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Every hash compared in constant time (no early exit), as the node does.
fn find<'k>(keys: &'k [LiveKey], digest: &[u8; 32]) -> Found<'k> {
    let now = now_ms();
    let (mut live, mut expired) = (None, false);
    for key in keys {
        let same = bool::from(key.digest.ct_eq(digest));
        let alive = key.expires_at == 0 || now < key.expires_at;
        if same & alive {
            live = Some(key);
        }
        expired |= same & !alive;
    }
    match live {
        Some(key) => Found::Live(key),
        None if expired => Found::Expired,
        None => Found::No,
    }
}
