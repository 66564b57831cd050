//! Every MCP call a node answers — `tools/call`, `resources/read`, `prompts/get` — leaves one
//! [`CallRecord`]: when, where (group, environment, zone, worker), who (the key's id and name,
//! or the OAuth subject), what, how long, how it ended, and the sizes. A team reads them to
//! answer "who called `payments.refund` yesterday, and how often did it fail" (issue 30).
//!
//! Recording must never slow a call: [`Recorder::record`] puts the record on a bounded queue
//! without waiting, and a record that does not fit is counted ([`Recorder::dropped`]), never
//! silently lost. A [`Batcher`] hands the queue on in batches (up to a size, or after a wait),
//! which is what the node publishes on the bus.
//!
//! Arguments are not recorded unless an environment asks for them, and then [`redact`]ed.

mod redact;
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub use redact::{REDACTED, redact};
pub use wire::batch_json;

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result.
    Ok,
    /// A `tools/call` result with `isError: true`: the tool ran and reported a failure.
    ToolError,
    /// A JSON-RPC error (its code is the record's `error_code`).
    Error,
    /// The package or tool is blocked on the environment or zone.
    Blocked,
    /// The caller may not call it (the environment's rules).
    Refused,
    /// The client cancelled it.
    Cancelled,
    /// The node was at its in-flight cap.
    Overloaded,
}

impl Outcome {
    /// Every outcome, in the order the API lists them.
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::Error,
        Outcome::Blocked,
        Outcome::Refused,
        Outcome::Cancelled,
        Outcome::Overloaded,
    ];

    /// The word: what serde writes and reads, and what the API and the CLI show.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Blocked => "blocked",
            Outcome::Refused => "refused",
            Outcome::Cancelled => "cancelled",
            Outcome::Overloaded => "overloaded",
        }
    }
}

/// One call, as a node answered it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// When the request arrived, Unix milliseconds.
    pub at_ms: i64,
    /// Group, zone and worker are the same for every record of a node: on the wire a batch
    /// says them once ([`CallBatch`]) and its records leave them empty; stored, each has them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub environment: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub worker: String,
    /// The MCP key's id, or the OAuth token's subject; empty for an anonymous caller.
    #[serde(default)]
    pub caller_id: String,
    /// The key's name, or the token's name for its subject; never a secret.
    #[serde(default)]
    pub caller_name: String,
    /// `tools/call`, `resources/read` or `prompts/get`.
    pub method: String,
    /// The tool, the resource's URI, or the prompt.
    pub target: String,
    pub duration_us: u64,
    pub outcome: Outcome,
    /// The JSON-RPC error code when `outcome` is `error`; 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub error_code: i64,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Only when the environment records arguments, and then redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

impl CallBatch {
    /// The records with the batch's group, zone and worker filled in where they are empty.
    pub fn into_records(self) -> Vec<CallRecord> {
        let CallBatch { group, zone, worker, mut records } = self;
        for record in &mut records {
            for (field, batch) in [
                (&mut record.group, &group),
                (&mut record.zone, &zone),
                (&mut record.worker, &worker),
            ] {
                if field.is_empty() {
                    field.clone_from(batch);
                }
            }
        }
        records
    }
}

/// The bus schema of a [`CallBatch`] (the `Ramen-Schema` header: name and version).
pub const BATCH_SCHEMA: (&str, u32) = ("ramen.calls.v1.CallBatch", 1);

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// What a node publishes: the records of one batch, all of one group and zone, answered by
/// one worker. Serialising a record is most of what recording costs a node, so what every
/// record shares is said once here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallBatch {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub zone: String,
    #[serde(default)]
    pub worker: String,
    pub records: Vec<CallRecord>,
}

/// The calls' end of the queue: cheap to clone, never waits.
#[derive(Clone, Debug)]
pub struct Recorder {
    queue: mpsc::Sender<CallRecord>,
    dropped: Arc<AtomicU64>,
}

impl Recorder {
    /// Queues the record; when the queue is full (the bus or the store behind it is slow),
    /// the record is counted as dropped instead, and the call goes on.
    pub fn record(&self, record: CallRecord) {
        if self.queue.try_send(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped so far because the queue was full or closed.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counts records a consumer lost after taking them from the queue (a failed publish).
    pub fn count_lost(&self, records: usize) {
        self.dropped.fetch_add(records as u64, Ordering::Relaxed);
    }
}

/// The publisher's end: batches of records in the order they were recorded.
#[derive(Debug)]
pub struct Batcher {
    queue: mpsc::Receiver<CallRecord>,
    max_batch: usize,
    max_wait: Duration,
}

impl Batcher {
    /// The next batch: waits for a first record, then takes what else comes until the batch
    /// holds `max_batch` records or `max_wait` has passed since the first. `None` once every
    /// recorder is gone and the queue is empty.
    ///
    /// After the first record the queue is looked at every [`POLL`] instead of being woken by
    /// each record: a wake-up per call would cost the node more than the record itself.
    pub async fn next(&mut self) -> Option<Vec<CallRecord>> {
        let first = self.queue.recv().await?;
        let mut batch = Vec::with_capacity(self.max_batch.min(1024));
        batch.push(first);
        let deadline = tokio::time::Instant::now() + self.max_wait;
        loop {
            while batch.len() < self.max_batch {
                match self.queue.try_recv() {
                    Ok(record) => batch.push(record),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => return Some(batch),
                }
            }
            let now = tokio::time::Instant::now();
            if batch.len() >= self.max_batch || now >= deadline {
                return Some(batch);
            }
            tokio::time::sleep_until(deadline.min(now + POLL)).await;
        }
    }
}

/// How often a batch being filled looks at the queue.
pub const POLL: Duration = Duration::from_millis(20);

/// A queue holding up to `capacity` records, handed on in batches of at most `max_batch`,
/// each at most `max_wait` after its first record.
pub fn queue(capacity: usize, max_batch: usize, max_wait: Duration) -> (Recorder, Batcher) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let recorder = Recorder { queue: tx, dropped: Arc::default() };
    (recorder, Batcher { queue: rx, max_batch: max_batch.max(1), max_wait })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored record: group, zone and worker filled in.
    pub(crate) fn record(n: i64) -> CallRecord {
        CallRecord {
            at_ms: n,
            group: "team".into(),
            environment: "prod".into(),
            zone: "local-a".into(),
            worker: "worker-0".into(),
            caller_id: "key-1".into(),
            caller_name: "ci".into(),
            method: "tools/call".into(),
            target: "notes.add".into(),
            duration_us: 120,
            outcome: Outcome::Ok,
            error_code: 0,
            request_bytes: 80,
            response_bytes: 40,
            arguments: None,
        }
    }

    #[test]
    fn each_outcome_has_one_word_which_is_its_serde_name() {
        for outcome in Outcome::ALL {
            let serde = serde_json::to_value(outcome).unwrap();
            assert_eq!(serde, outcome.as_str(), "{outcome:?}");
        }
        let words = Outcome::ALL.map(Outcome::as_str).join(", ");
        assert_eq!(words, "ok, tool_error, error, blocked, refused, cancelled, overloaded");
    }

    #[tokio::test(start_paused = true)]
    async fn batches_fill_up_to_their_size_then_wait_no_longer_than_the_wait() {
        let (recorder, mut batcher) = queue(100, 3, Duration::from_secs(1));
        for n in 0..5 {
            recorder.record(record(n));
        }
        let full: Vec<i64> = batcher.next().await.unwrap().iter().map(|r| r.at_ms).collect();
        assert_eq!(full, [0, 1, 2], "a full batch goes at once, in order");
        let started = tokio::time::Instant::now();
        let rest: Vec<i64> = batcher.next().await.unwrap().iter().map(|r| r.at_ms).collect();
        assert_eq!(rest, [3, 4]);
        assert_eq!(started.elapsed(), Duration::from_secs(1), "a partial batch waits its time");
        drop(recorder);
        assert!(batcher.next().await.is_none(), "no recorder, nothing queued: the end");
    }

    #[tokio::test]
    async fn a_full_queue_counts_what_it_drops_and_never_waits() {
        let (recorder, mut batcher) = queue(2, 10, Duration::from_millis(1));
        for n in 0..5 {
            recorder.record(record(n));
        }
        assert_eq!(recorder.dropped(), 3);
        assert_eq!(batcher.next().await.unwrap().len(), 2);
        recorder.count_lost(2);
        assert_eq!(recorder.dropped(), 5, "a batch lost after the queue is counted too");
    }

    #[test]
    fn a_record_reads_as_the_store_and_the_api_keep_it() {
        let mut r = record(1);
        r.outcome = Outcome::ToolError;
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["outcome"], "tool_error");
        assert!(json.get("arguments").is_none(), "no arguments unless recorded");
        let back: CallRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
        assert_eq!(Outcome::Overloaded.as_str(), "overloaded");
    }
}
