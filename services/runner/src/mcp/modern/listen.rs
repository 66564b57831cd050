//! `subscriptions/listen`: a POST whose SSE response stays open and carries the change
//! notifications the client opted into — list changes (a reload, a runtime re-list, a
//! blocked-list edit) and updates of named resources. The acknowledgment comes first; every
//! message carries the subscription id (the request's JSON-RPC id) in `_meta`; when the node
//! shuts down the stream ends with the request's result (graceful closure).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::envelope::{Params, Refusal};
use super::refuse;
use crate::mcp::calls::Accepts;
use crate::mcp::changes::{Change, Listener};
use crate::mcp::http::sse_response;
use crate::mcp::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, OVERLOADED};
use crate::mcp::session::sse_event;
use crate::node::Node;

const KEEPALIVE: Duration = Duration::from_secs(15);
const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The notification filter, as requested and as honored.
#[derive(Deserialize, Default, Debug)]
struct Filter {
    #[serde(rename = "toolsListChanged", default)]
    tools: bool,
    #[serde(rename = "promptsListChanged", default)]
    prompts: bool,
    #[serde(rename = "resourcesListChanged", default)]
    resources: bool,
    #[serde(rename = "resourceSubscriptions", default)]
    uris: Vec<String>,
}

impl Filter {
    fn honored(&self) -> Value {
        let mut out = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                out.insert(key.into(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        Value::Object(out)
    }

    /// The notification for `change`, if this stream asked for it.
    fn wants<'c>(&self, change: &'c Change) -> Option<(&'static str, Option<&'c str>)> {
        match change {
            Change::Tools if self.tools => Some(("notifications/tools/list_changed", None)),
            Change::Prompts if self.prompts => Some(("notifications/prompts/list_changed", None)),
            Change::Resources if self.resources => {
                Some(("notifications/resources/list_changed", None))
            }
            Change::ResourceUpdated(uri) if self.uris.iter().any(|u| u == &**uri) => {
                Some(("notifications/resources/updated", Some(uri)))
            }
            _ => None,
        }
    }
}

pub fn open(node: &Arc<Node>, id: &RawValue, params: &Params, accepts: Accepts) -> Response {
    let id_text = id.get().to_owned();
    if !accepts.sse {
        let refusal = Refusal::new(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "subscriptions/listen answers with an event stream: Accept must include text/event-stream",
        );
        return refuse(Some(&id_text), refusal);
    }
    let filter: Filter = match params.notifications.map(|n| serde_json::from_str(n.get())) {
        None => Filter::default(),
        Some(Ok(filter)) => filter,
        Some(Err(error)) => {
            let refusal = Refusal::new(
                StatusCode::BAD_REQUEST,
                INVALID_PARAMS,
                format!("params.notifications is not a notification filter: {error}"),
            );
            return refuse(Some(&id_text), refusal);
        }
    };
    let Some(listener) = node.changes.listen(node.settings.max_sessions) else {
        let refusal = Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            OVERLOADED,
            format!("this node holds its maximum of {} listen streams", node.settings.max_sessions),
        );
        return refuse(Some(&id_text), refusal);
    };
    let meta =
        json!({ SUBSCRIPTION_KEY: serde_json::from_str::<Value>(&id_text).unwrap_or(Value::Null) });
    let ack = notification(
        "notifications/subscriptions/acknowledged",
        json!({"_meta": meta, "notifications": filter.honored()}),
    );
    let state = Stream { listener, filter, meta, id: id_text, done: false };
    let events = futures::stream::once(async move { Ok::<_, Infallible>(ack) }).chain(
        futures::stream::unfold(state, |mut state| async move {
            let next = state.next().await?;
            Some((Ok(next), state))
        }),
    );
    let keepalive = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval_at(
        tokio::time::Instant::now() + KEEPALIVE,
        KEEPALIVE,
    ))
    .map(|_| Ok(Bytes::from_static(b": keep-alive\n\n")));
    // `None` marks the end of the events (the node closed the subscription): `select` alone
    // would go on with the keep-alives forever.
    let events = events.map(Some).chain(futures::stream::once(async { None }));
    let merged = futures::stream::select(events, keepalive.map(Some))
        .take_while(|event| futures::future::ready(event.is_some()))
        .filter_map(|event| async move { event });
    sse_response(Body::from_stream(merged))
}

struct Stream {
    listener: Listener,
    filter: Filter,
    meta: Value,
    id: String,
    done: bool,
}

impl Stream {
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        loop {
            let change = match self.listener.changes.recv().await {
                Ok(change) => change,
                // Missed some: say every subscribed list may have changed.
                Err(RecvError::Lagged(_)) => Change::Tools,
                Err(RecvError::Closed) => Change::Closing,
            };
            if change == Change::Closing {
                self.done = true;
                let result = json!({"resultType": "complete", "_meta": self.meta});
                return Some(sse_event(&format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
                    self.id
                )));
            }
            if let Some((method, uri)) = self.filter.wants(&change) {
                let mut params = json!({"_meta": self.meta});
                if let Some(uri) = uri {
                    params["uri"] = json!(uri);
                }
                return Some(notification(method, params));
            }
        }
    }
}

fn notification(method: &str, params: Value) -> Bytes {
    sse_event(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
}
