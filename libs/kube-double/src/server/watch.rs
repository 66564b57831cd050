//! Watches: newline-delimited `{"type": ..., "object": ...}` events over one chunked
//! response, as the apiserver streams them.
//!
//! - `resourceVersion` unset or `0`: synthetic ADDED events for the current state first;
//!   `N`: every kept change after N; N older than the kept history: one ERROR event with a
//!   410 `Expired` Status (HTTP 200, as the watch cache answers), so clients relist.
//! - `allowWatchBookmarks`: a BOOKMARK with the latest resourceVersion seen, each second
//!   while it moves; with `sendInitialEvents` the initial ADDED events end with the
//!   `k8s.io/initial-events-end` bookmark.
//! - The stream ends after `timeoutSeconds`, when the double shuts down, when the watch
//!   history is expired by the test (an apiserver restart, as a client sees it), or when the
//!   client falls too far behind.
//!
//! Simplification: selectors filter on an object's new state only; an object that stops
//! matching produces no DELETED event.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::routes::Target;
use super::verbs::Filter;
use super::{Call, Shared};
use crate::resources::ResourceType;
use crate::store::Change;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
const BOOKMARK_EVERY: Duration = Duration::from_secs(1);

struct WatchState {
    queue: VecDeque<Value>,
    changes: Option<broadcast::Receiver<Arc<Change>>>,
    rt: &'static ResourceType,
    namespace: Option<String>,
    filter: Filter,
    /// Changes up to here were delivered (or filtered out).
    last_rv: u64,
    bookmarks: bool,
    bookmarked_rv: u64,
    deadline: Instant,
    epoch: tokio::sync::watch::Receiver<u64>,
    shutdown: CancellationToken,
}

fn event(kind: &str, object: &Value) -> Value {
    json!({"type": kind, "object": object})
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event(
        "BOOKMARK",
        &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata}),
    )
}

fn expired(requested: u64, oldest: u64) -> Value {
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("too old resource version: {requested} ({oldest})"),
        "reason": "Expired", "code": 410,
    });
    event("ERROR", &status)
}

pub(crate) fn watch(shared: &Shared, target: &Target, call: &Call) -> Response {
    let filter = match Filter::from_call(call) {
        Ok(filter) => filter,
        Err(err) => return err.into_response(),
    };
    let timeout = call
        .param("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let bookmarks = call.flag("allowWatchBookmarks");
    let requested =
        call.param("resourceVersion").and_then(|rv| rv.parse::<u64>().ok()).unwrap_or(0);
    let mut queue = VecDeque::new();
    let start_rv = if requested > 0 {
        requested
    } else {
        let (items, list_rv) = shared.store.list(target.rt, target.namespace.as_deref());
        queue.extend(items.iter().filter(|o| filter.matches(o)).map(|o| event("ADDED", o)));
        if bookmarks && call.flag("sendInitialEvents") {
            queue.push_back(bookmark(target.rt, list_rv, true));
        }
        list_rv
    };
    let mut last_rv = start_rv;
    let changes = match shared.store.watch_from(start_rv) {
        Some((backlog, changes)) => {
            last_rv = backlog.last().map_or(start_rv, |c| c.rv);
            queue.extend(
                backlog
                    .iter()
                    .filter(|c| wanted(target.rt, target.namespace.as_deref(), &filter, c))
                    .map(|c| event(c.kind.as_str(), &c.object)),
            );
            Some(changes)
        }
        None => {
            queue = VecDeque::from([expired(start_rv, shared.store.compacted())]);
            None
        }
    };
    let state = WatchState {
        queue,
        changes,
        rt: target.rt,
        namespace: target.namespace.clone(),
        filter,
        last_rv,
        bookmarks,
        bookmarked_rv: start_rv,
        deadline: Instant::now() + timeout,
        epoch: shared.watch_epoch.subscribe(),
        shutdown: shared.shutdown.clone(),
    };
    let stream = futures::stream::unfold(state, next_line);
    let headers = [(http::header::CONTENT_TYPE, "application/json")];
    (headers, Body::from_stream(stream)).into_response()
}

fn wanted(rt: &ResourceType, namespace: Option<&str>, filter: &Filter, change: &Change) -> bool {
    std::ptr::eq(change.rt, rt)
        && namespace.is_none_or(|ns| !rt.namespaced || ns == change.namespace)
        && filter.matches(&change.object)
}

async fn next_line(mut st: WatchState) -> Option<(Result<Bytes, Infallible>, WatchState)> {
    loop {
        if let Some(line) = st.queue.pop_front() {
            let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
            bytes.push(b'\n');
            return Some((Ok(Bytes::from(bytes)), st));
        }
        let changes = st.changes.as_mut()?;
        let tick = tokio::time::sleep(BOOKMARK_EVERY);
        tokio::select! {
            _ = st.shutdown.cancelled() => return None,
            _ = st.epoch.changed() => return None,
            _ = tokio::time::sleep_until(st.deadline) => return None,
            _ = tick, if st.bookmarks => {
                if st.last_rv > st.bookmarked_rv {
                    st.bookmarked_rv = st.last_rv;
                    st.queue.push_back(bookmark(st.rt, st.last_rv, false));
                }
            }
            received = changes.recv() => match received {
                Ok(change) if change.rv > st.last_rv => {
                    st.last_rv = change.rv;
                    if wanted(st.rt, st.namespace.as_deref(), &st.filter, &change) {
                        st.queue.push_back(event(change.kind.as_str(), &change.object));
                    }
                }
                Ok(_) => {}
                // Too far behind or closed: end the watch; the client resumes from its last
                // resourceVersion, which the history still holds.
                Err(_) => return None,
            },
        }
    }
}
