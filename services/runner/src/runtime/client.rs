//! Calls into the runtime: many concurrent calls multiplexed over one pipe, each with its own
//! event channel (notifications first, then exactly one result).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc};

use super::frame;
use crate::HashMap;

/// A JSON-RPC error as the runtime (or the node on its behalf) reports it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }
}

/// JSON-RPC code the runtime uses for a cancelled call.
pub const CANCELLED: i64 = -32800;
pub const INTERNAL: i64 = -32603;

#[derive(Debug)]
pub enum CallEvent {
    /// `{"method": "notifications/progress" | "notifications/message", "params": {...}}`.
    Notification(Box<RawValue>),
    /// A request the tool makes of the client (sampling, elicitation), as
    /// `{"rid", "method", "params"}`: answer with [`Calls::respond`] using `rid`.
    ServerRequest {
        rid: u64,
        request: Box<RawValue>,
    },
    Done(Result<Box<RawValue>, RpcError>),
}

/// The multiplexer state shared by the node's callers and the runtime's reader task.
pub(crate) struct Calls {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, mpsc::Sender<CallEvent>>>,
    writer: Mutex<Option<mpsc::UnboundedSender<Bytes>>>,
    /// Set when the runtime said a list changed (in a call or on its own): the node
    /// re-lists. A `Notify` keeps one permit, so a burst of hints is one re-list.
    pub relist: Notify,
}

impl Calls {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            next_id: AtomicU64::new(1),
            pending: Default::default(),
            writer: Mutex::new(None),
            relist: Notify::new(),
        })
    }

    /// Points the multiplexer at a freshly started runtime's stdin.
    pub fn attach(&self, writer: mpsc::UnboundedSender<Bytes>) {
        *self.writer.lock() = Some(writer);
    }

    /// Fails every call in flight with `error` and detaches the dead runtime.
    pub fn fail_all(&self, error: RpcError) {
        *self.writer.lock() = None;
        let pending: Vec<_> = self.pending.lock().drain().collect();
        for (_, events) in pending {
            let _ = events.try_send(CallEvent::Done(Err(error.clone())));
        }
    }

    pub fn in_flight(&self) -> usize {
        self.pending.lock().len()
    }

    pub fn ids(&self) -> Vec<u64> {
        self.pending.lock().keys().copied().collect()
    }

    /// Sends a request built by `build(id)`; the returned receiver yields its events.
    pub fn start(
        &self,
        build: impl FnOnce(u64) -> Vec<u8>,
    ) -> Result<(u64, mpsc::Receiver<CallEvent>), RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(32);
        let frame = frame::encode(&build(id));
        self.pending.lock().insert(id, tx);
        let sent = self.writer.lock().as_ref().is_some_and(|w| w.send(frame).is_ok());
        if !sent {
            self.pending.lock().remove(&id);
            return Err(RpcError::new(
                INTERNAL,
                "the Python runtime is not running; retry shortly",
            ));
        }
        Ok((id, rx))
    }

    /// Asks the runtime to cancel call `id` (it then answers that call with -32800).
    pub fn cancel(&self, id: u64) {
        if self.pending.lock().contains_key(&id) {
            self.send_raw(format!(r#"{{"op":"cancel","target":{id}}}"#).as_bytes());
        }
    }

    /// Answers a server→client request the runtime made on behalf of a tool.
    pub fn respond(&self, rid: u64, outcome: Result<&RawValue, &RpcError>) {
        let body = match outcome {
            Ok(result) => format!(r#"{{"op":"response","rid":{rid},"result":{}}}"#, result.get()),
            Err(err) => format!(
                r#"{{"op":"response","rid":{rid},"error":{}}}"#,
                serde_json::to_string(err).unwrap_or_else(|_| "{}".into())
            ),
        };
        self.send_raw(body.as_bytes());
    }

    pub fn send_raw(&self, json: &[u8]) {
        if let Some(writer) = self.writer.lock().as_ref() {
            let _ = writer.send(frame::encode(json));
        }
    }

    /// Routes one frame from the runtime to the call it belongs to.
    pub fn dispatch(&self, incoming: Incoming) {
        if let Some(notification) = &incoming.notification
            && is_list_changed(notification)
        {
            self.relist.notify_one();
        }
        let Some(id) = incoming.id else {
            if let Some(error) = incoming.error {
                tracing::warn!(code = error.code, message = %error.message, "runtime reported an error");
            }
            return;
        };
        if let Some(notification) = incoming.notification {
            let sender = self.pending.lock().get(&id).cloned();
            if let Some(sender) = sender {
                // Progress and log lines are advisory; a slow client may miss some.
                let _ = sender.try_send(CallEvent::Notification(notification));
            }
            return;
        }
        if let Some(request) = incoming.request {
            let Ok(Rid { rid }) = serde_json::from_str(request.get()) else {
                tracing::warn!("runtime sent a request without a numeric `rid`");
                return;
            };
            let sender = self.pending.lock().get(&id).cloned();
            match sender {
                Some(sender) => {
                    let _ = sender.try_send(CallEvent::ServerRequest { rid, request });
                }
                None => self.respond(rid, Err(&RpcError::new(INTERNAL, "call already finished"))),
            }
            return;
        }
        let outcome = match (incoming.result, incoming.error) {
            (Some(result), _) => Ok(result),
            (None, Some(error)) => Err(error),
            (None, None) => {
                Err(RpcError::new(INTERNAL, "runtime answered with neither result nor error"))
            }
        };
        if let Some(sender) = self.pending.lock().remove(&id) {
            let _ = sender.try_send(CallEvent::Done(outcome));
        }
    }

    /// Forgets a call whose caller went away (its result, if any, is dropped).
    pub fn forget(&self, id: u64) -> bool {
        self.pending.lock().remove(&id).is_some()
    }
}

fn is_list_changed(notification: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
    }
    let text = notification.get();
    text.contains("list_changed")
        && serde_json::from_str::<Method>(text).is_ok_and(|m| m.method.ends_with("/list_changed"))
}

/// One frame from the runtime. Results stay raw JSON so they are spliced into the client's
/// response without being parsed and re-serialized.
#[derive(Deserialize)]
pub(crate) struct Incoming {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub op: Option<String>,
    #[serde(default)]
    pub report: Option<Box<RawValue>>,
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    #[serde(default)]
    pub error: Option<RpcError>,
    #[serde(default)]
    pub notification: Option<Box<RawValue>>,
    /// `{"rid": K, "method": ..., "params": ...}`.
    #[serde(default)]
    pub request: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Rid {
    rid: u64,
}
