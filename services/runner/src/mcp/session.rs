//! MCP sessions held by this node. Sessions are not shared between nodes: the edge keeps a
//! client on the node that created its session, and a client whose node is gone gets 404 and
//! initializes again, as the MCP specification prescribes.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::HashMap;

/// Events a slow GET stream may fall behind by before it misses some.
const STREAM_BUFFER: usize = 64;

/// Protocol revisions this node speaks, newest first.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
pub const LATEST_VERSION: &str = SUPPORTED_VERSIONS[0];

/// RFC 5424 levels as MCP names them, lowest first.
pub const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

pub fn log_level_rank(level: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

pub struct Session {
    pub id: String,
    /// Who opened it (a digest of the MCP key; empty without keys), for the per-key cap.
    pub owner: String,
    pub protocol_version: String,
    /// `{"protocolVersion","capabilities","clientInfo","sessionId"}` as JSON, passed to the
    /// runtime with each call so tools can check what the client supports.
    pub client: String,
    /// Minimum level of log notifications the client wants (`logging/setLevel`); 0 = all.
    pub log_level: AtomicU8,
    /// Server→client messages for the session's GET streams (already SSE-framed), made when
    /// the first GET stream opens: a channel's ring is allocated up front (~3.5 KiB for 64
    /// slots), and most sessions never open a stream.
    stream: OnceLock<broadcast::Sender<Bytes>>,
    /// Client request id (raw JSON) → runtime call id, for `notifications/cancelled`.
    pub calls: Mutex<HashMap<String, u64>>,
    /// Server request id (raw JSON) we sent the client → the runtime's request id.
    pub server_requests: Mutex<HashMap<String, u64>>,
    next_server_request: AtomicU64,
    last_seen: Mutex<Instant>,
}

impl Session {
    /// A receiver of the session's server→client events (a GET stream).
    pub fn events(&self) -> broadcast::Receiver<Bytes> {
        self.stream.get_or_init(|| broadcast::channel(STREAM_BUFFER).0).subscribe()
    }

    /// Sends an event to the session's GET streams, if it has any.
    pub fn send_event(&self, event: Bytes) {
        if let Some(stream) = self.stream.get() {
            let _ = stream.send(event);
        }
    }

    pub fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    pub fn idle_for(&self) -> Duration {
        self.last_seen.lock().elapsed()
    }

    /// A fresh id for a request the server sends this client.
    pub fn next_server_request_id(&self) -> String {
        format!("\"ramen-{}\"", self.next_server_request.fetch_add(1, Ordering::Relaxed))
    }

    pub fn wants_log(&self, level: &str) -> bool {
        log_level_rank(level).unwrap_or(u8::MAX) >= self.log_level.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// Open sessions per owner (locked after `map`, never before).
    per_owner: Mutex<HashMap<String, usize>>,
}

#[derive(Debug, thiserror::Error)]
pub enum Full {
    #[error("this node holds its maximum of {0} sessions")]
    Node(usize),
    #[error(
        "this key holds its maximum of {0} open sessions on this node; end some (DELETE) or let them expire"
    )]
    Key(usize),
}

/// The caps [`Sessions::create`] enforces.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    pub node: usize,
    pub per_key: usize,
}

impl Sessions {
    /// `capabilities` and `client_info` are the raw JSON the client sent in `initialize`.
    pub fn create(
        &self,
        protocol_version: &str,
        capabilities: &str,
        client_info: &str,
        owner: &str,
        caps: Caps,
    ) -> Result<Arc<Session>, Full> {
        let mut map = self.map.lock();
        if map.len() >= caps.node {
            return Err(Full::Node(caps.node));
        }
        let mut per_owner = self.per_owner.lock();
        let held = per_owner.entry(owner.to_owned()).or_default();
        if !owner.is_empty() && *held >= caps.per_key {
            return Err(Full::Key(caps.per_key));
        }
        *held += 1;
        drop(per_owner);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let client = format!(
            r#"{{"protocolVersion":"{protocol_version}","capabilities":{capabilities},"clientInfo":{client_info},"sessionId":"{id}"}}"#
        );
        let session = Arc::new(Session {
            id,
            owner: owner.to_owned(),
            client,
            protocol_version: protocol_version.to_owned(),
            log_level: AtomicU8::new(0),
            stream: OnceLock::new(),
            calls: Default::default(),
            server_requests: Default::default(),
            next_server_request: AtomicU64::new(1),
            last_seen: Mutex::new(Instant::now()),
        });
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.map.lock().get(id).cloned();
        if let Some(session) = &session {
            session.touch();
        }
        session
    }

    /// Ends a session; its GET streams close once the last sender is gone.
    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let mut map = self.map.lock();
        let removed = map.remove(id);
        if let Some(session) = &removed {
            self.release(std::slice::from_ref(&session.owner));
        }
        removed
    }

    /// Gives back the per-owner slots of ended sessions (called with `map` held).
    fn release(&self, owners: &[String]) {
        let mut per_owner = self.per_owner.lock();
        for owner in owners {
            if let Some(held) = per_owner.get_mut(owner) {
                *held = held.saturating_sub(1);
                if *held == 0 {
                    per_owner.remove(owner);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends an SSE event to every open session's GET streams.
    pub fn broadcast(&self, event: Bytes) {
        for session in self.map.lock().values() {
            session.send_event(event.clone());
        }
    }

    /// Drops sessions idle longer than `idle`; returns how many.
    pub fn expire(&self, idle: Duration) -> usize {
        let mut map = self.map.lock();
        let mut ended = Vec::new();
        map.retain(|_, s| {
            let keep = s.idle_for() < idle;
            if !keep {
                ended.push(s.owner.clone());
            }
            keep
        });
        self.release(&ended);
        ended.len()
    }
}

/// Frames one JSON-RPC message as a server-sent event.
pub fn sse_event(json: &str) -> Bytes {
    let mut out = String::with_capacity(json.len() + 24);
    out.push_str("event: message\ndata: ");
    out.push_str(json);
    out.push_str("\n\n");
    Bytes::from(out)
}

impl Sessions {
    /// Whether the session is still open (without touching its idle clock).
    pub fn contains(&self, id: &str) -> bool {
        self.map.lock().contains_key(id)
    }
}

impl Sessions {
    pub fn ids(&self) -> Vec<String> {
        self.map.lock().keys().cloned().collect()
    }
}
