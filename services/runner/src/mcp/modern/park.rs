//! Calls waiting for their client (2026-07-28 multi-round-trip, done by the node): a tool
//! of a stateless call asked its client something mid-call (`ctx.elicit()`, sampling,
//! roots) and the request has no stream to ask on. The node keeps the call waiting, its
//! in-flight slot freed, and answers the request with an `InputRequiredResult` carrying the
//! question and a `requestState` naming the waiting call. The client's retry — same method,
//! same target, same key — brings the answer: the node hands it to the tool and the call
//! goes on, answering the retry. Unanswered calls are cancelled after `WAIT`.
//!
//! `requestState` is `r1.<token>.<node id>`: the token is 128 random bits known only to
//! this node; the node id lets the edge send the retry to the node that holds the call.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::HashMap;
use crate::mcp::calls::ActiveCall;

/// How long a call waits for its client's answer.
pub const WAIT: Duration = Duration::from_secs(300);
const PREFIX: &str = "r1.";

/// A tool's request to the client, as the runtime sent it.
pub struct Question {
    /// The runtime's id for it (answered with `respond`).
    pub rid: u64,
    pub method: String,
    pub params: Map<String, Value>,
}

impl Question {
    /// The key of this question in `inputRequests` / `inputResponses`.
    pub fn key(&self) -> String {
        format!("ramen-{}", self.rid)
    }
}

pub(crate) struct Waiting {
    pub(crate) call: ActiveCall,
    pub(crate) question: Question,
    since: Instant,
}

pub struct Parked {
    node_id: String,
    max: usize,
    waiting: Mutex<HashMap<String, Waiting>>,
}

/// Why a retry's `requestState` names no call this node can resume.
#[derive(Debug, PartialEq, Eq)]
pub enum Unknown {
    /// Not a state this node issued (a package's own, resumed by the package).
    NotOurs,
    /// Ours, but the call is gone (answered, expired, cancelled) or the retry does not match.
    Gone(String),
}

impl Parked {
    pub fn new(node_id: &str, max: usize) -> Self {
        Self { node_id: node_id.to_owned(), max, waiting: Mutex::default() }
    }

    pub fn len(&self) -> usize {
        self.waiting.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `call` waiting for `question`; returns the `InputRequiredResult` to answer with,
    /// or why the node cannot keep another call waiting (the call is then dropped: cancelled).
    pub(crate) fn park(&self, call: ActiveCall, question: Question) -> Result<String, String> {
        let mut waiting = self.waiting.lock();
        if waiting.len() >= self.max {
            return Err(format!(
                "this node holds its maximum of {} calls waiting for their clients",
                self.max
            ));
        }
        let token = uuid::Uuid::new_v4().simple().to_string();
        let state = format!("{PREFIX}{token}.{}", self.node_id);
        let result = json!({
            "resultType": "input_required",
            "inputRequests": { question.key(): { "method": question.method, "params": question.params } },
            "requestState": state,
        });
        waiting.insert(token, Waiting { call, question, since: Instant::now() });
        Ok(result.to_string())
    }

    /// Takes the call a retry resumes: `state` must be one this node issued, for a call of
    /// `method` on `target` from `principal`. A mismatch leaves the call waiting.
    pub(crate) fn take(
        &self,
        state: &str,
        method: &str,
        target: &str,
        principal: &str,
    ) -> Result<Waiting, Unknown> {
        let token = match token_of(state) {
            Some((token, node)) if node == self.node_id => token,
            Some((_, node)) => {
                return Err(Unknown::Gone(format!(
                    "requestState belongs to a call waiting on node {node:?}, not this one"
                )));
            }
            None => return Err(Unknown::NotOurs),
        };
        let mut waiting = self.waiting.lock();
        let Some(found) = waiting.get(token) else {
            return Err(Unknown::Gone(format!(
                "requestState names no waiting call (answered already, or it waited over {} s): call again without it",
                WAIT.as_secs()
            )));
        };
        let scope = found.call.stateless_scope();
        let matches = found.call.method() == method
            && scope.is_some_and(|s| s.target == target && s.principal == principal);
        if !matches {
            return Err(Unknown::Gone("requestState was issued for another request".into()));
        }
        Ok(waiting.remove(token).expect("present"))
    }

    /// Cancels the calls that waited longer than `wait` (dropping a call cancels it).
    pub fn expire(&self, wait: Duration) -> usize {
        let expired: Vec<Waiting> = {
            let mut waiting = self.waiting.lock();
            let old: Vec<String> = waiting
                .iter()
                .filter(|(_, w)| w.since.elapsed() >= wait)
                .map(|(k, _)| k.clone())
                .collect();
            old.iter().filter_map(|k| waiting.remove(k)).collect()
        };
        expired.len()
    }

    /// Cancels every waiting call (the node stops).
    pub fn clear(&self) {
        let all: Vec<Waiting> = self.waiting.lock().drain().map(|(_, w)| w).collect();
        drop(all);
    }
}

/// `(token, node id)` of a state this kind of node issues.
pub fn token_of(state: &str) -> Option<(&str, &str)> {
    state
        .strip_prefix(PREFIX)?
        .split_once('.')
        .filter(|(token, node)| token.len() == 32 && !node.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_name_a_token_and_a_node() {
        let token = "0123456789abcdef0123456789abcdef";
        assert_eq!(token_of(&format!("r1.{token}.node-a.zone-1")), Some((token, "node-a.zone-1")));
        assert_eq!(token_of("r1.short.node"), None);
        assert_eq!(token_of("eyJwYWNrYWdlIjoic3RhdGUifQ.sig"), None, "a package's own state");
        let parked = Parked::new("node-a", 10);
        let other = format!("r1.{token}.node-b");
        assert!(matches!(parked.take(&other, "tools/call", "t", "p"), Err(Unknown::Gone(_))));
        assert_eq!(parked.take("opaque", "tools/call", "t", "p").err(), Some(Unknown::NotOurs));
        let unknown = format!("r1.{token}.node-a");
        assert!(matches!(parked.take(&unknown, "tools/call", "t", "p"), Err(Unknown::Gone(_))));
    }
}
