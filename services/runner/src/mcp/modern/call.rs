//! `tools/call`, `resources/read` and `prompts/get` of a stateless request: the same path to
//! the runtime as a session's (`methods::call_runtime`), under a stateless scope; and the
//! retry of a call that waits for its client (`park`), which resumes that call instead.

use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::envelope::{self, Envelope, Params, Refusal};
use super::stateless::Stateless;
use super::{params, park};
use crate::mcp::calls::{self, Accepts, Reply, Scope};
use crate::mcp::http::{into_response, json_response};
use crate::mcp::jsonrpc::{self, INVALID_PARAMS, OVERLOADED};
use crate::mcp::methods::{self, Target};
use crate::node::Node;
use crate::policy::CallerId;

/// A validated runtime-bound request.
pub struct Request<'r, 'a> {
    pub headers: &'r HeaderMap,
    pub caller: &'r CallerId,
    pub id: &'r RawValue,
    pub method: &'r str,
    pub params: &'r Params<'a>,
    pub envelope: Envelope<'a>,
}

/// `{"inputResponses": …, "requestState": …}` of a retried request, for the runtime (the
/// package's own multi-round-trip flow), or `None` on a first round.
fn input_json(params: &Params) -> Option<String> {
    if params.input_responses.is_none() && params.request_state.is_none() {
        return None;
    }
    let mut out = serde_json::Map::new();
    if let Some(responses) = params.input_responses {
        out.insert(
            "inputResponses".into(),
            serde_json::from_str(responses.get()).unwrap_or(Value::Null),
        );
    }
    if let Some(state) = &params.request_state {
        out.insert("requestState".into(), json!(state));
    }
    Some(Value::Object(out).to_string())
}

pub async fn runtime_bound(
    node: &Arc<Node>,
    request: Request<'_, '_>,
    accepts: Accepts,
    started: Instant,
) -> Response {
    let Request { headers, caller, id, method, params, envelope } = request;
    let target = match method {
        "resources/read" => params.uri.as_deref(),
        _ => params.name.as_deref(),
    }
    .unwrap_or_default(); // validate() refused a request without one
    let scope = Scope::Stateless(Arc::new(Stateless {
        log_level: envelope.log_level,
        capabilities: envelope.capabilities.get().to_owned(),
        target: target.to_owned(),
        principal: caller.owner(),
    }));
    if let Some(state) = params.request_state.as_deref() {
        match node.parked.take(state, method, target, &caller.owner()) {
            Ok(waiting) => {
                let answers = params.input_responses;
                let progress = envelope.progress_token.clone();
                return resume(node, id, waiting, answers, scope, accepts, progress).await;
            }
            Err(park::Unknown::NotOurs) => {} // the package's own state: it resumes itself
            Err(park::Unknown::Gone(message)) => {
                node.metrics.record(method, "", "error", started.elapsed().as_secs_f64());
                return json_response(
                    StatusCode::OK,
                    jsonrpc::error(Some(id.get()), INVALID_PARAMS, &message, None),
                );
            }
        }
    }
    let call = Target {
        target,
        arguments: params.arguments,
        meta: Some(envelope.meta),
        progress_token: envelope.progress_token.clone(),
        client: envelope.client_json(),
        caller,
        input: input_json(params),
    };
    let check = |catalog: &crate::catalog::Catalog| {
        if method != "tools/call" {
            return Ok(());
        }
        params::check(headers, catalog.param_headers(target), params.arguments).map_err(|message| {
            let refusal = Refusal::new(StatusCode::BAD_REQUEST, envelope::HEADER_MISMATCH, message);
            Reply::Status(
                refusal.status,
                jsonrpc::error(Some(id.get()), refusal.code, &refusal.message, None),
            )
        })
    };
    let reply = methods::call_runtime(node, scope, id, method, call, accepts, started, check).await;
    into_response(reply)
}

/// A retry of a call that waits for its client: hand the tool the answer and go on. Without
/// an answer to the question the call waits again, asking the same.
async fn resume(
    node: &Arc<Node>,
    id: &RawValue,
    waiting: park::Waiting,
    answers: Option<&RawValue>,
    scope: Scope,
    accepts: Accepts,
    progress_token: Option<Box<RawValue>>,
) -> Response {
    let park::Waiting { call, question, .. } = waiting;
    let key = question.key();
    let answer = answers
        .and_then(|a| serde_json::from_str::<serde_json::Map<String, Value>>(a.get()).ok())
        .and_then(|mut a| a.remove(&key));
    let Some(answer) = answer.and_then(|a| serde_json::value::to_raw_value(&a).ok()) else {
        let reask = match node.parked.park(call, question) {
            Ok(result) => jsonrpc::result(id.get(), &result),
            Err(refusal) => jsonrpc::error(Some(id.get()), OVERLOADED, &refusal, None),
        };
        return json_response(StatusCode::OK, reask);
    };
    let Some(slot) = node.try_slot() else {
        let _ = node.parked.park(call, question); // still waiting: the client may retry
        let message =
            format!("node at its cap of {} calls in flight; retry", node.settings.in_flight_cap);
        return into_response(Reply::Overloaded(jsonrpc::error(
            Some(id.get()),
            OVERLOADED,
            &message,
            None,
        )));
    };
    node.runtime.respond(question.rid, Ok(&answer));
    let call = call.resume(id, slot, scope, accepts, progress_token);
    into_response(calls::drive(call).await)
}
