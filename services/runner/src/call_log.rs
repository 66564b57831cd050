//! Call records: each `tools/call`, `resources/read` and `prompts/get` this node answers leaves
//! one [`CallRecord`] (who, what, how long, how it ended, the sizes). A call only puts its
//! record on a bounded queue (`ramen_call_records::Recorder`, never waiting); a background
//! task publishes the queue in batches on `ramen.calls.v1.node.<group>.<zone>` and waits for
//! JetStream's ack. A record the queue had no room for, or a batch the stream did not take,
//! is counted (`ramen_call_records_lost_total`), never silently gone.
//!
//! Arguments are kept only where the environment says so (`record_arguments`), redacted:
//! secret-looking field names and the values of the environment's secrets.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ramen_bus::auth::{NODE_MAX_PAYLOAD, node_calls_subject, parse_node_calls_subject};
use ramen_bus::{PublishOptions, Schema, Subject};
use ramen_call_records::{Batcher, CallBatch, CallRecord, Outcome, Recorder};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::node::{Identity, Node};
use crate::node_bus::NodeBus;
use crate::policy::CallerId;

/// Records a node holds while the bus is slow or away: about a few MB.
const QUEUE_CAPACITY: usize = 10_000;
/// Records per batch, and the longest a record waits for its batch.
const BATCH_RECORDS: usize = 500;
const BATCH_WAIT: Duration = Duration::from_millis(200);
/// Arguments bigger than this are recorded as their size only.
const MAX_ARGUMENT_BYTES: usize = 8 * 1024;
/// A batch is split until it is this small: under the node user's payload limit.
const MAX_BATCH_BYTES: usize = (NODE_MAX_PAYLOAD as usize) * 3 / 4;

/// Where a node's calls are recorded: off for a node outside a placement or without a bus.
#[derive(Default)]
pub struct CallLog {
    recorder: Option<Recorder>,
    /// The environment's secret values (the node config's `env`), redacted from arguments.
    secrets: Vec<String>,
}

/// What a call's record knows when the call starts. `request_bytes` is the size of what the
/// call names and carries (target and arguments), whether or not the arguments are kept.
pub(crate) struct CallNote {
    at_ms: i64,
    caller: CallerId,
    method: &'static str,
    target: String,
    environment: String,
    request_bytes: u64,
    arguments: Option<serde_json::Value>,
}

impl CallLog {
    /// A log whose records go to `recorder`.
    pub fn new(recorder: Recorder, secrets: Vec<String>) -> Self {
        Self { recorder: Some(recorder), secrets }
    }

    /// Records dropped or lost so far (0 when off).
    pub fn lost(&self) -> u64 {
        self.recorder.as_ref().map_or(0, Recorder::dropped)
    }

    /// The start of a call's record; `None` when calls are not recorded here.
    pub(crate) fn note(
        &self,
        node: &Node,
        caller: &CallerId,
        method: &str,
        target: &str,
        arguments: Option<&RawValue>,
    ) -> Option<CallNote> {
        self.recorder.as_ref()?;
        let method = match method {
            "tools/call" => "tools/call",
            "resources/read" => "resources/read",
            _ => "prompts/get",
        };
        let policy = node.policy();
        let request_bytes = (arguments.map_or(0, |raw| raw.get().len()) + target.len()) as u64;
        let arguments = arguments
            .filter(|_| policy.source.record_arguments)
            .map(|raw| self.recorded_arguments(raw));
        Some(CallNote {
            at_ms: now_ms(),
            caller: caller.clone(),
            method,
            target: target.to_owned(),
            environment: policy.source.environment.clone(),
            request_bytes,
            arguments,
        })
    }

    fn recorded_arguments(&self, raw: &RawValue) -> serde_json::Value {
        if raw.get().len() > MAX_ARGUMENT_BYTES {
            return serde_json::json!({ "_omitted_bytes": raw.get().len() });
        }
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        match serde_json::from_str(raw.get()) {
            Ok(value) => ramen_call_records::redact(&value, &secrets),
            Err(_) => serde_json::Value::Null,
        }
    }

    /// Queues the call's record; never waits.
    pub(crate) fn finish(
        &self,
        note: CallNote,
        started: Instant,
        outcome: Outcome,
        error_code: i64,
        response_bytes: usize,
    ) {
        let Some(recorder) = &self.recorder else { return };
        let (caller_id, caller_name) = match &note.caller {
            CallerId::Anonymous => (String::new(), String::new()),
            CallerId::Key { id, name, .. } => (id.to_string(), name.to_string()),
            CallerId::Token(token) => {
                let name = token.name.clone().or_else(|| token.email.clone());
                (token.subject.clone(), name.unwrap_or_default())
            }
        };
        recorder.record(CallRecord {
            at_ms: note.at_ms,
            // The batch says these once for all its records (`encode`).
            group: String::new(),
            environment: note.environment,
            zone: String::new(),
            worker: String::new(),
            caller_id,
            caller_name,
            method: note.method.to_owned(),
            target: note.target,
            duration_us: started.elapsed().as_micros() as u64,
            outcome,
            error_code: if outcome == Outcome::Error { error_code } else { 0 },
            request_bytes: note.request_bytes,
            response_bytes: response_bytes as u64,
            arguments: note.arguments,
        });
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

/// A queue for a node's records: the log's end and the publisher's.
pub fn queue() -> (Recorder, Batcher) {
    ramen_call_records::queue(QUEUE_CAPACITY, BATCH_RECORDS, BATCH_WAIT)
}

/// Publishes the node's batches until cancelled, as the placement's NATS user; what the
/// stream does not take is counted as lost.
pub async fn run(
    node: Arc<Node>,
    mut batcher: Batcher,
    recorder: Recorder,
    bus: NodeBus,
    token: CancellationToken,
) {
    let (group, zone) = (node.identity.group.clone(), node.identity.zone.clone());
    let name = node_calls_subject(&group, &zone);
    if parse_node_calls_subject(&name).is_none() {
        tracing::warn!(%group, %zone, "no call records: a node outside a placement has no subject to publish them on");
        return;
    }
    let (schema, version) = ramen_call_records::BATCH_SCHEMA;
    // Batches go out as the JSON `encode` wrote for them: serialised once, never twice.
    let subject: Subject<CallBatch> = Subject::new(name, Schema::new(schema, version));
    let Some(bus) = bus.get("call records", Duration::from_secs(2), &token).await else { return };
    let mut reported = 0;
    loop {
        let batch = tokio::select! {
            () = token.cancelled() => break,
            batch = batcher.next() => batch,
        };
        let Some(batch) = batch else { break };
        for (records, json) in encode(&node.identity, batch) {
            let publish = bus.publish_encoded(&subject, json.into(), PublishOptions::default());
            if let Err(err) = publish.await {
                tracing::warn!(%err, records, "call records not taken by the stream; counted as lost");
                recorder.count_lost(records);
            }
        }
        reported = report_lost(&node, &recorder, reported);
    }
    report_lost(&node, &recorder, reported);
}

/// Adds the records lost since the last report to the node's counter.
fn report_lost(node: &Node, recorder: &Recorder, reported: u64) -> u64 {
    let lost = recorder.dropped();
    node.metrics.call_records_lost.inc_by(lost.saturating_sub(reported));
    lost
}

/// The batch as `CallBatch` JSON, in parts that each fit [`MAX_BATCH_BYTES`], with how many
/// records each holds. Serialised once when it fits (nearly always); a part too big is halved.
/// A single record too big on its own (huge arguments under a raised limit) goes without its
/// arguments.
fn encode(placement: &Identity, batch: Vec<CallRecord>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending = vec![batch];
    while let Some(mut records) = pending.pop() {
        let json = batch_json(placement, &records);
        if json.len() <= MAX_BATCH_BYTES {
            out.push((records.len(), json));
        } else if records.len() > 1 {
            let back = records.split_off(records.len() / 2);
            pending.push(back);
            pending.push(records);
        } else {
            records[0].arguments = Some(serde_json::json!({ "_omitted": "too large to record" }));
            out.push((1, batch_json(placement, &records)));
        }
    }
    out
}

/// `CallBatch` JSON without copying the records (written by hand: see `ramen_call_records::batch_json`).
fn batch_json(placement: &Identity, records: &[CallRecord]) -> String {
    ramen_call_records::batch_json(&placement.group, &placement.zone, &placement.node_id, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement() -> Identity {
        let (node_id, group, zone) = ("w".into(), "g".into(), "z".into());
        Identity { node_id, group, zone, track: "worker".into() }
    }

    /// A record as the node makes it: no group, zone or worker (the batch has them).
    fn record(n: i64, arguments: Option<serde_json::Value>) -> CallRecord {
        CallRecord {
            at_ms: n,
            group: String::new(),
            environment: "prod".into(),
            zone: String::new(),
            worker: String::new(),
            caller_id: "k".into(),
            caller_name: "ci".into(),
            method: "tools/call".into(),
            target: "notes.add".into(),
            duration_us: 1,
            outcome: Outcome::Ok,
            error_code: 0,
            request_bytes: 0,
            response_bytes: 0,
            arguments,
        }
    }

    #[test]
    fn a_batch_is_split_under_the_payload_limit_in_order() {
        let big = serde_json::json!({ "text": "x".repeat(MAX_ARGUMENT_BYTES) });
        let batch: Vec<_> = (0..100).map(|n| record(n, Some(big.clone()))).collect();
        let parts = encode(&placement(), batch);
        assert!(parts.len() > 1, "100 × 8 KiB does not fit one payload");
        let mut order = Vec::new();
        for (count, json) in &parts {
            assert!(json.len() <= MAX_BATCH_BYTES, "{}", json.len());
            let decoded: CallBatch = serde_json::from_str(json).unwrap();
            assert_eq!(decoded.records.len(), *count);
            order.extend(decoded.records.iter().map(|r| r.at_ms));
        }
        assert_eq!(order, (0..100).collect::<Vec<_>>(), "every record, in order");
        let small: Vec<_> = (0..3).map(|n| record(n, None)).collect();
        let whole = encode(&placement(), small.clone());
        assert_eq!(whole.len(), 1, "a small batch goes whole");
        let decoded: CallBatch = serde_json::from_str(&whole[0].1).unwrap();
        let said_once = (decoded.group.as_str(), decoded.zone.as_str(), decoded.worker.as_str());
        assert_eq!(said_once, ("g", "z", "w"));
        assert!(!whole[0].1.contains(r#""worker":"w","records":[{"at_ms":0,"worker""#));
        let mut expected = small;
        for r in &mut expected {
            (r.group, r.zone, r.worker) = ("g".into(), "z".into(), "w".into());
        }
        assert_eq!(decoded.into_records(), expected, "the batch's placement fills each record");
    }
}
