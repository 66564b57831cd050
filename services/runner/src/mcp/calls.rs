//! One call into the runtime on behalf of a client request. The answer is plain JSON when the
//! result comes first; the response becomes an SSE stream as soon as the runtime has
//! something to say before the result (progress, a log line, a request to the client).
//!
//! A call answers to a [`Scope`]: a 2025-11-25 session (cancellable by
//! `notifications/cancelled`, log level set by `logging/setLevel`, server→client requests
//! relayed on the stream) or one stateless 2026-07-28 request (log level and capabilities
//! from its `_meta`, no requests to the client: a missing capability is -32021, results
//! carry `resultType`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::StatusCode;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, OVERLOADED};
use super::modern::park::Question;
use super::modern::stateless::{self, Asked, Stateless};
use super::session::{Session, log_level_rank, sse_event};
use super::tool_result;
use crate::call_log::CallNote;
use crate::node::{Node, Slot};
use crate::runtime::{CANCELLED, CallEvent, RpcError};
use ramen_call_records::Outcome;

/// What the client said it accepts on a POST.
#[derive(Clone, Copy, Debug)]
pub struct Accepts {
    pub json: bool,
    pub sse: bool,
}

pub enum Reply {
    Json(String),
    /// A JSON body with another status than 200 (2026-07-28 refusals: 400, 404).
    Status(StatusCode, String),
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
    /// Who the client is (see `Session::client`; for a stateless request, its `_meta`).
    pub client: String,
    /// Who is calling (`CallerId::frame`): never the key or token.
    pub caller: Option<Arc<str>>,
    /// A 2026-07-28 retry's `{"inputResponses", "requestState"}` (multi-round-trip).
    pub input: Option<String>,
}

/// Who a call answers to.
#[derive(Clone)]
pub enum Scope {
    Session(Arc<Session>),
    Stateless(Arc<Stateless>),
}

impl Scope {
    fn wants_log(&self, level: &str) -> bool {
        match self {
            Scope::Session(session) => session.wants_log(level),
            Scope::Stateless(request) => {
                request.log_level.is_some_and(|min| log_level_rank(level).unwrap_or(u8::MAX) >= min)
            }
        }
    }
}

impl RuntimeRequest {
    fn frame(&self, rid: u64) -> Vec<u8> {
        use std::io::Write as _;
        // Sized once and written in place: growing a string field by field, and the target's
        // own JSON string, cost more than the writing.
        let optional = |part: &Option<String>| part.as_ref().map_or(0, String::len);
        let capacity = 64
            + 2 * self.target.len()
            + optional(&self.arguments)
            + optional(&self.meta)
            + self.client.len()
            + self.caller.as_ref().map_or(0, |c| c.len())
            + optional(&self.input);
        let mut out = Vec::with_capacity(capacity);
        // Writing into a Vec cannot fail, nor can serialising a string.
        let _ = write!(out, r#"{{"id":{rid},"op":"{}","{}":"#, self.op, self.target_field);
        if serde_json::to_writer(&mut out, &self.target).is_err() {
            out.extend_from_slice(br#""""#);
        }
        let mut field = |name: &[u8], value: &str| {
            out.extend_from_slice(name);
            out.extend_from_slice(value.as_bytes());
        };
        if let Some(arguments) = &self.arguments {
            field(br#","arguments":"#, arguments);
        }
        if let Some(meta) = &self.meta {
            field(br#","meta":"#, meta);
        }
        field(br#","client":"#, &self.client);
        if let Some(caller) = &self.caller {
            field(br#","caller":"#, caller);
        }
        if let Some(input) = &self.input {
            field(br#","input":"#, input);
        }
        out.push(b'}');
        out
    }
}

/// A call in flight. Dropping it before the result arrived (the client went away, or it
/// waited too long for its client's answer) cancels the call in the runtime and frees its
/// slot.
pub(crate) struct ActiveCall {
    node: Arc<Node>,
    scope: Scope,
    id: String,
    rid: u64,
    events: mpsc::Receiver<CallEvent>,
    /// `None` while the call waits for its client (2026-07-28 multi-round-trip).
    slot: Option<Slot>,
    finished: bool,
    method: String,
    package: String,
    /// The catalogued tool of a `tools/call` (per-tool series).
    tool: Option<String>,
    started: Instant,
    progress_token: Option<Box<RawValue>>,
    accepts: Accepts,
    /// The call's record, written when it ends (`None`: calls are not recorded here).
    note: Option<CallNote>,
    /// Open for as long as the runtime works on the call (closed when this is dropped).
    _span: tracing::Span,
}

impl Drop for ActiveCall {
    fn drop(&mut self) {
        if let Scope::Session(session) = &self.scope {
            session.calls.lock().remove(&self.id);
        }
        if !self.finished {
            self.node.runtime.abandon(self.rid);
            let seconds = self.started.elapsed().as_secs_f64();
            let tool = self.tool.as_deref();
            self.node.metrics.record_call(&self.method, &self.package, tool, "cancelled", seconds);
            if let Some(note) = self.note.take() {
                self.node.calls.finish(note, self.started, Outcome::Cancelled, 0, 0);
            }
        }
    }
}

/// Records a call answered without reaching the runtime (refused, blocked, overloaded, …).
pub(crate) fn record_reply(
    node: &Node,
    note: Option<CallNote>,
    started: Instant,
    outcome: Outcome,
    reply: &Reply,
) {
    let Some(note) = note else { return };
    let body = match reply {
        Reply::Json(body) | Reply::Status(_, body) | Reply::Overloaded(body) => body.as_str(),
        Reply::Sse(_) => "",
    };
    let code = if outcome == Outcome::Error { error_code(body) } else { 0 };
    node.calls.finish(note, started, outcome, code, body.len());
}

/// The `error.code` of a JSON-RPC error response; 0 when it has none.
fn error_code(body: &str) -> i64 {
    #[derive(Deserialize)]
    struct Response {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    serde_json::from_str::<Response>(body).ok().and_then(|r| r.error).map_or(0, |e| e.code)
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    node: &Arc<Node>,
    scope: Scope,
    id: &RawValue,
    method: &str,
    package: String,
    tool: Option<String>,
    request: RuntimeRequest,
    accepts: Accepts,
    started: Instant,
    note: Option<CallNote>,
) -> Reply {
    let id_text = id.get().to_owned();
    let Some(slot) = node.try_slot() else {
        let seconds = started.elapsed().as_secs_f64();
        node.metrics.record_call(method, &package, tool.as_deref(), "overloaded", seconds);
        let message =
            format!("node at its cap of {} calls in flight; retry", node.settings.in_flight_cap);
        let reply = Reply::Overloaded(jsonrpc::error(Some(&id_text), OVERLOADED, &message, None));
        record_reply(node, note, started, Outcome::Overloaded, &reply);
        return reply;
    };
    let (rid, events) = match node.runtime.call(|rid| request.frame(rid)) {
        Ok(call) => call,
        Err(err) => {
            let seconds = started.elapsed().as_secs_f64();
            node.metrics.record_call(method, &package, tool.as_deref(), "error", seconds);
            let reply = Reply::Json(jsonrpc::error(Some(&id_text), err.code, &err.message, None));
            record_reply(node, note, started, Outcome::Error, &reply);
            return reply;
        }
    };
    if let Scope::Session(session) = &scope {
        session.calls.lock().insert(id_text.clone(), rid);
    }
    let span = tracing::info_span!("runtime.call", %method, %package, rid);
    let call = ActiveCall {
        node: node.clone(),
        scope,
        id: id_text,
        rid,
        events,
        slot: Some(slot),
        finished: false,
        method: method.to_owned(),
        package,
        tool,
        started,
        progress_token: request.progress_token,
        accepts,
        note,
        _span: span,
    };
    drive(call).await
}

/// Turns a call's events into the client's response: the result as JSON, or an SSE stream
/// once there is something to say first; a stateless call whose tool asks its client
/// something is parked and answered with the question.
pub(crate) async fn drive(mut call: ActiveCall) -> Reply {
    loop {
        match call.events.recv().await {
            None => return call.reply(Err(lost())),
            Some(CallEvent::Done(outcome)) => return call.reply(outcome),
            Some(event) => match call.translate(event) {
                Step::Emit(first) if call.accepts.sse => return Reply::Sse(stream(call, first)),
                Step::Emit(_) | Step::Skip => {}
                Step::Finish(outcome) => return call.reply(outcome),
                Step::Park(question) => return call.park(question),
            },
        }
    }
}

/// What one runtime event means for the client's response.
enum Step {
    /// An SSE event to send before the result.
    Emit(Bytes),
    Skip,
    /// The call ends here, with this outcome (the runtime call is abandoned).
    Finish(Result<Box<RawValue>, RpcError>),
    /// The tool asks the client of a stateless call: the call waits, the response asks.
    Park(Question),
}

fn lost() -> RpcError {
    RpcError::new(INTERNAL_ERROR, "the runtime dropped the call; retry it")
}

fn stream(call: ActiveCall, first: Bytes) -> Body {
    let state = (Some(call), Some(first));
    let events = futures::stream::unfold(state, |(call, first)| async move {
        let mut call = call?;
        if let Some(first) = first {
            return Some((Ok::<_, Infallible>(first), (Some(call), None)));
        }
        if call.finished {
            return None;
        }
        let last = loop {
            match call.events.recv().await {
                None => break call.finish(Err(lost())),
                Some(CallEvent::Done(outcome)) => break call.finish(outcome),
                Some(event) => match call.translate(event) {
                    Step::Emit(bytes) => return Some((Ok(bytes), (Some(call), None))),
                    Step::Skip => {}
                    Step::Finish(outcome) => break call.finish(outcome),
                    Step::Park(question) => {
                        let body = match call.park(question) {
                            Reply::Json(body)
                            | Reply::Status(_, body)
                            | Reply::Overloaded(body) => body,
                            Reply::Sse(_) => unreachable!("a parked call answers with JSON"),
                        };
                        return Some((Ok(sse_event(&body)), (None, None)));
                    }
                },
            }
        };
        Some((Ok(sse_event(&last)), (Some(call), None)))
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
    /// The final answer as a plain (non-stream) response.
    fn reply(&mut self, outcome: Result<Box<RawValue>, RpcError>) -> Reply {
        let status = match (&self.scope, &outcome) {
            (Scope::Stateless(_), Err(err)) => stateless::error_status(err.code),
            _ => StatusCode::OK,
        };
        let body = self.finish(outcome);
        if status == StatusCode::OK { Reply::Json(body) } else { Reply::Status(status, body) }
    }

    /// The JSON-RPC response for the runtime's outcome; records the metric.
    fn finish(&mut self, outcome: Result<Box<RawValue>, RpcError>) -> String {
        self.finished = true;
        let modern = matches!(self.scope, Scope::Stateless(_));
        let mut code = 0;
        let (body, label) = match outcome {
            Ok(result) => {
                let raw = result.get();
                let tool_error = self.method == "tools/call" && tool_result::is_tool_error(raw);
                let label = if tool_error { "tool_error" } else { "ok" };
                if modern {
                    (jsonrpc::result(&self.id, &stateless::shape_result(&self.method, raw)), label)
                } else {
                    (jsonrpc::result(&self.id, raw), label)
                }
            }
            Err(mut err) => {
                let label = if err.code == CANCELLED { "cancelled" } else { "error" };
                if modern && err.code == stateless::LEGACY_RESOURCE_NOT_FOUND {
                    err.code = INVALID_PARAMS; // 2026-07-28 retired -32002
                }
                code = err.code;
                (jsonrpc::error(Some(&self.id), err.code, &err.message, err.data.as_ref()), label)
            }
        };
        self.node.metrics.record_call(
            &self.method,
            &self.package,
            self.tool.as_deref(),
            label,
            self.started.elapsed().as_secs_f64(),
        );
        if let Some(note) = self.note.take() {
            let outcome = match label {
                "ok" => Outcome::Ok,
                "tool_error" => Outcome::ToolError,
                "cancelled" => Outcome::Cancelled,
                _ => Outcome::Error,
            };
            self.node.calls.finish(note, self.started, outcome, code, body.len());
        }
        body
    }

    /// Turns a runtime notification or request into what the client sees: an SSE event,
    /// nothing (no progress token, log level below its setting, not request-scoped), or the
    /// end of the call (a stateless client lacks a capability the tool needs).
    fn translate(&mut self, event: CallEvent) -> Step {
        match event {
            CallEvent::Notification(raw) => self.notification(&raw).map_or(Step::Skip, Step::Emit),
            CallEvent::ServerRequest { rid, request } => match &self.scope {
                Scope::Session(session) => {
                    let session = session.clone();
                    self.relay_request(&session, rid, &request).map_or(Step::Skip, Step::Emit)
                }
                Scope::Stateless(request_scope) => {
                    match stateless::server_request(&self.node, request_scope, rid, &request) {
                        Asked::Answered => Step::Skip,
                        Asked::Refused(err) => {
                            self.node.runtime.abandon(self.rid);
                            Step::Finish(Err(err))
                        }
                        Asked::Client(question) => Step::Park(question),
                    }
                }
            },
            CallEvent::Done(_) => Step::Skip,
        }
    }

    fn notification(&mut self, raw: &RawValue) -> Option<Bytes> {
        let mut message: RuntimeMessage = serde_json::from_str(raw.get()).ok()?;
        match message.method.as_str() {
            "notifications/progress" => {
                let token = serde_json::from_str(self.progress_token.as_ref()?.get()).ok()?;
                message.params.insert("progressToken".into(), token);
            }
            "notifications/message" => {
                let level = message.params.get("level").and_then(Value::as_str).unwrap_or("info");
                if !self.scope.wants_log(level) {
                    return None;
                }
            }
            "notifications/resources/updated" => {
                if let Some(uri) = message.params.get("uri").and_then(Value::as_str) {
                    self.node.changes.resource_updated(uri);
                }
                if matches!(self.scope, Scope::Stateless(_)) {
                    return None; // delivered on subscriptions/listen streams only
                }
            }
            // List changes are not about this request: the node re-lists and tells
            // listeners. A session's stream still carries them, as it always did.
            _ if matches!(self.scope, Scope::Stateless(_)) => return None,
            _ => {}
        }
        let params = serde_json::to_string(&message.params).ok()?;
        Some(sse_event(&jsonrpc::notification(&message.method, Some(&params))))
    }

    /// Leaves the call waiting for its client's answer (its slot freed) and answers the
    /// request with the question (`InputRequiredResult`).
    fn park(mut self, question: Question) -> Reply {
        self.slot = None;
        let node = self.node.clone();
        let id = self.id.clone();
        let seconds = self.started.elapsed().as_secs_f64();
        let tool = self.tool.as_deref();
        node.metrics.record_call(&self.method, &self.package, tool, "input_required", seconds);
        match node.parked.park(self, question) {
            Ok(result) => Reply::Json(jsonrpc::result(&id, &result)),
            Err(refusal) => {
                Reply::Overloaded(jsonrpc::error(Some(&id), OVERLOADED, &refusal, None))
            }
        }
    }

    /// The scope a parked call was asked under (what its retry must match).
    pub(crate) fn stateless_scope(&self) -> Option<&Stateless> {
        match &self.scope {
            Scope::Stateless(scope) => Some(scope),
            Scope::Session(_) => None,
        }
    }

    pub(crate) fn method(&self) -> &str {
        &self.method
    }

    /// A parked call answers the client's retry `id` from here on.
    pub(crate) fn resume(
        mut self,
        id: &RawValue,
        slot: Slot,
        scope: Scope,
        accepts: Accepts,
        progress_token: Option<Box<RawValue>>,
    ) -> Self {
        self.id = id.get().to_owned();
        self.slot = Some(slot);
        self.scope = scope;
        self.accepts = accepts;
        self.progress_token = progress_token;
        self.started = Instant::now();
        self
    }

    /// Relays a tool's request (sampling, elicitation, roots) to a session's client.
    fn relay_request(&mut self, session: &Session, rid: u64, request: &RawValue) -> Option<Bytes> {
        if !self.accepts.sse {
            let refusal = RpcError::new(
                INVALID_REQUEST,
                "the client accepts no event stream, so it cannot be asked anything",
            );
            self.node.runtime.respond(rid, Err(&refusal));
            return None;
        }
        let message: RuntimeMessage = serde_json::from_str(request.get()).ok()?;
        let sid = session.next_server_request_id();
        session.server_requests.lock().insert(sid.clone(), rid);
        let params = serde_json::to_string(&message.params).ok()?;
        let method = serde_json::to_string(&message.method).ok()?;
        Some(sse_event(&format!(
            r#"{{"jsonrpc":"2.0","id":{sid},"method":{method},"params":{params}}}"#
        )))
    }
}
