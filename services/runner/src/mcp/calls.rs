//! One call into the runtime on behalf of a client request. The answer is plain JSON when the
//! result comes first; the response becomes an SSE stream as soon as the runtime has
//! something to say before the result (progress, a log line, a request to the client).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::jsonrpc::{self, INTERNAL_ERROR, INVALID_REQUEST, OVERLOADED};
use super::session::{Session, sse_event};
use crate::node::{Node, Slot};
use crate::runtime::{CANCELLED, CallEvent, RpcError};

/// What the client said it accepts on a POST.
#[derive(Clone, Copy, Debug)]
pub struct Accepts {
    pub json: bool,
    pub sse: bool,
}

pub enum Reply {
    Json(String),
    Sse(Body),
    /// At the in-flight cap: HTTP 503 with `Retry-After`.
    Overloaded(String),
}

impl Reply {
    pub fn json(body: String) -> Self {
        Self::Json(body)
    }

    pub fn error(id: &str, code: i64, message: &str) -> Self {
        Self::Json(jsonrpc::error(Some(id), code, message, None))
    }
}

/// The request frame for the runtime, minus the id it is given at send time.
pub struct RuntimeRequest {
    pub op: &'static str,
    pub target_field: &'static str,
    pub target: String,
    pub arguments: Option<String>,
    pub progress_token: Option<Box<RawValue>>,
    /// The client's `_meta`, passed through (tools see it as the request context's meta).
    pub meta: Option<String>,
    /// The session's client description (see `Session::client`).
    pub client: String,
}

impl RuntimeRequest {
    fn frame(&self, rid: u64) -> Vec<u8> {
        let target = serde_json::to_string(&self.target).unwrap_or_else(|_| "\"\"".into());
        let mut out =
            format!(r#"{{"id":{rid},"op":"{}","{}":{target}"#, self.op, self.target_field);
        if let Some(arguments) = &self.arguments {
            out.push_str(r#","arguments":"#);
            out.push_str(arguments);
        }
        if let Some(meta) = &self.meta {
            out.push_str(r#","meta":"#);
            out.push_str(meta);
        }
        out.push_str(r#","client":"#);
        out.push_str(&self.client);
        out.push('}');
        out.into_bytes()
    }
}

/// A call in flight. Dropping it before the result arrived (the client went away) cancels
/// the call in the runtime and frees its slot.
struct ActiveCall {
    node: Arc<Node>,
    session: Arc<Session>,
    id: String,
    rid: u64,
    events: mpsc::Receiver<CallEvent>,
    _slot: Slot,
    finished: bool,
    method: String,
    package: String,
    started: Instant,
    progress_token: Option<Box<RawValue>>,
    accepts: Accepts,
    /// Open for as long as the runtime works on the call (closed when this is dropped).
    _span: tracing::Span,
}

impl Drop for ActiveCall {
    fn drop(&mut self) {
        self.session.calls.lock().remove(&self.id);
        if !self.finished {
            self.node.runtime.abandon(self.rid);
            let seconds = self.started.elapsed().as_secs_f64();
            self.node.metrics.record(&self.method, &self.package, "cancelled", seconds);
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub async fn run(
    node: &Arc<Node>,
    session: &Arc<Session>,
    id: &RawValue,
    method: &str,
    package: String,
    request: RuntimeRequest,
    accepts: Accepts,
    started: Instant,
) -> Reply {
    let id_text = id.get().to_owned();
    let Some(slot) = node.try_slot() else {
        node.metrics.record(method, &package, "overloaded", started.elapsed().as_secs_f64());
        let message =
            format!("node at its cap of {} calls in flight; retry", node.settings.in_flight_cap);
        return Reply::Overloaded(jsonrpc::error(Some(&id_text), OVERLOADED, &message, None));
    };
    let (rid, events) = match node.runtime.call(|rid| request.frame(rid)) {
        Ok(call) => call,
        Err(err) => {
            node.metrics.record(method, &package, "error", started.elapsed().as_secs_f64());
            return Reply::Json(jsonrpc::error(Some(&id_text), err.code, &err.message, None));
        }
    };
    session.calls.lock().insert(id_text.clone(), rid);
    let span = tracing::info_span!("runtime.call", %method, %package, rid);
    let mut call = ActiveCall {
        node: node.clone(),
        session: session.clone(),
        id: id_text,
        rid,
        events,
        _slot: slot,
        finished: false,
        method: method.to_owned(),
        package,
        started,
        progress_token: request.progress_token,
        accepts,
        _span: span,
    };
    loop {
        match call.events.recv().await {
            None => return Reply::Json(call.finish(Err(lost()))),
            Some(CallEvent::Done(outcome)) => return Reply::Json(call.finish(outcome)),
            Some(event) => {
                if let Some(first) = call.translate(event)
                    && call.accepts.sse
                {
                    return Reply::Sse(stream(call, first));
                }
            }
        }
    }
}

fn lost() -> RpcError {
    RpcError::new(INTERNAL_ERROR, "the runtime dropped the call; retry it")
}

fn stream(call: ActiveCall, first: Bytes) -> Body {
    let events = futures::stream::unfold((call, Some(first)), |(mut call, first)| async move {
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(first), (call, None)));
        }
        if call.finished {
            return None;
        }
        loop {
            match call.events.recv().await {
                None => {
                    let last = sse_event(&call.finish(Err(lost())));
                    return Some((Ok(last), (call, None)));
                }
                Some(CallEvent::Done(outcome)) => {
                    let last = sse_event(&call.finish(outcome));
                    return Some((Ok(last), (call, None)));
                }
                Some(event) => {
                    if let Some(bytes) = call.translate(event) {
                        return Some((Ok(bytes), (call, None)));
                    }
                }
            }
        }
    });
    Body::from_stream(events)
}

#[derive(Deserialize)]
struct RuntimeMessage {
    method: String,
    #[serde(default)]
    params: Map<String, Value>,
}

impl ActiveCall {
    /// The JSON-RPC response for the runtime's outcome; records the metric.
    fn finish(&mut self, outcome: Result<Box<RawValue>, RpcError>) -> String {
        self.finished = true;
        let (body, label) = match outcome {
            Ok(result) => {
                let raw = result.get();
                let tool_error = self.method == "tools/call"
                    && (raw.contains(r#""isError":true"#) || raw.contains(r#""isError": true"#));
                (jsonrpc::result(&self.id, raw), if tool_error { "tool_error" } else { "ok" })
            }
            Err(err) => {
                let label = if err.code == CANCELLED { "cancelled" } else { "error" };
                (jsonrpc::error(Some(&self.id), err.code, &err.message, err.data.as_ref()), label)
            }
        };
        self.node.metrics.record(
            &self.method,
            &self.package,
            label,
            self.started.elapsed().as_secs_f64(),
        );
        body
    }

    /// Turns a runtime notification or request into an SSE event for the client, or `None`
    /// when the client did not ask for it (no progress token, log level below its setting).
    fn translate(&mut self, event: CallEvent) -> Option<Bytes> {
        match event {
            CallEvent::Notification(raw) => {
                let mut message: RuntimeMessage = serde_json::from_str(raw.get()).ok()?;
                match message.method.as_str() {
                    "notifications/progress" => {
                        let token =
                            serde_json::from_str(self.progress_token.as_ref()?.get()).ok()?;
                        message.params.insert("progressToken".into(), token);
                    }
                    "notifications/message" => {
                        let level =
                            message.params.get("level").and_then(Value::as_str).unwrap_or("info");
                        if !self.session.wants_log(level) {
                            return None;
                        }
                    }
                    _ => {}
                }
                let params = serde_json::to_string(&message.params).ok()?;
                Some(sse_event(&jsonrpc::notification(&message.method, Some(&params))))
            }
            CallEvent::ServerRequest { rid, request } => {
                if !self.accepts.sse {
                    let refusal = RpcError::new(
                        INVALID_REQUEST,
                        "the client accepts no event stream, so it cannot be asked anything",
                    );
                    self.node.runtime.respond(rid, Err(&refusal));
                    return None;
                }
                let message: RuntimeMessage = serde_json::from_str(request.get()).ok()?;
                let sid = self.session.next_server_request_id();
                self.session.server_requests.lock().insert(sid.clone(), rid);
                let params = serde_json::to_string(&message.params).ok()?;
                let method = serde_json::to_string(&message.method).ok()?;
                Some(sse_event(&format!(
                    r#"{{"jsonrpc":"2.0","id":{sid},"method":{method},"params":{params}}}"#
                )))
            }
            CallEvent::Done(_) => None,
        }
    }
}
