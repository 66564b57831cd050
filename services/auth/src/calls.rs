//! Call records: every `tools/call`, `resources/read` and `prompts/get` a node answered. Nodes
//! publish them in batches on `ramen.calls.v1.node.<group>.<zone>` (JetStream, stream
//! `RAMEN_CALLS`); auth stores them in `auth_calls`, kept for `calls.retention`, and members of
//! the group read them back newest first, or summed up over a window ([`Auth::call_usage`]).
//!
//! A batch is stored under ids made of its stream sequence and its index in the batch, so a
//! batch delivered twice (auth stopped before its ack) is written over itself, never twice.

use std::collections::HashMap;
use std::time::Duration;

use prost_types::Timestamp;
use ramen_bus::auth::parse_node_calls_subject;
use ramen_bus::auth::{CALLS_DLQ, CALLS_DURABLE, CALLS_STREAM, NODE_CALLS_FILTER};
use ramen_bus::{Bus, ConsumerSpec, Schema, Subject, WorkStreamSpec};
use ramen_call_records::{CallBatch, CallRecord, Outcome};
use ramen_proto::auth::v1::{
    Action, CallOutcome, CallUsageRequest, CallUsageResponse, CallerUsage, QueryCallsRequest,
    QueryCallsResponse, TargetUsage, UsageBucket, UsageFigures, UsageWindow,
};
use ramen_store::Query;
use tokio_util::sync::CancellationToken;

use crate::error::AuthError;
use crate::model::now_ms;
use crate::{Auth, paging};
use ramen_access::Caller;

/// The most calls one usage summary reads; a busier window is summed over its newest calls
/// and says so (`truncated`).
pub const USAGE_MAX_CALLS: u64 = 200_000;
/// Callers a usage summary lists.
const USAGE_CALLERS: usize = 10;

/// Where a batch came from: the subject it was published on names the placement, and the
/// node's NATS user may publish on its own placement's subject only.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    pub group: &'a str,
    pub zone: &'a str,
    /// The batch's stream sequence: with the index, each record's id.
    pub sequence: u64,
}

/// Batches wait this long in the stream for auth (down, or its store down) before the
/// oldest go: records are kept, not piled up forever.
const STREAM_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// A failed store write is retried after this.
const RETRY_DELAY: Duration = Duration::from_secs(5);

/// Every node's call-record batches.
pub fn batches() -> Subject<CallBatch> {
    let (name, version) = ramen_call_records::BATCH_SCHEMA;
    Subject::new(NODE_CALLS_FILTER, Schema::new(name, version))
}

/// The stream the nodes' batches wait in until auth has stored them.
pub async fn ensure_stream(bus: &Bus) -> Result<(), ramen_bus::BusError> {
    bus.ensure_work_stream(&WorkStreamSpec {
        name: CALLS_STREAM.to_owned(),
        subjects: vec![NODE_CALLS_FILTER.to_owned()],
        max_age: STREAM_MAX_AGE,
        max_payload: ramen_bus::auth::NODE_MAX_PAYLOAD as i32,
        dlq_name: CALLS_DLQ.to_owned(),
        ..WorkStreamSpec::default()
    })
    .await
}

/// Stores the nodes' batches until `stop`. A batch the store refuses is retried; after the
/// last attempt it is parked in `RAMEN_CALLS_DLQ` (the dead-letter admin shows it), never
/// dropped unseen. Replicas of auth share the durable, so each batch is stored by one.
pub async fn ingest(auth: Auth, bus: Bus, stop: CancellationToken) {
    let spec = ConsumerSpec {
        stream: CALLS_STREAM.to_owned(),
        durable: CALLS_DURABLE.to_owned(),
        max_deliver: 10,
        ..ConsumerSpec::default()
    };
    let mut consumer = loop {
        match bus.work_consumer(spec.clone(), &batches()).await {
            Ok(consumer) => break consumer,
            Err(error) => {
                tracing::warn!(%error, "call records: cannot open the consumer yet");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(RETRY_DELAY) => {}
                }
            }
        }
    };
    loop {
        let delivery = tokio::select! {
            () = stop.cancelled() => return,
            next = consumer.next() => next,
        };
        let mut delivery = match delivery {
            Ok(delivery) => delivery,
            Err(error) => {
                tracing::warn!(%error, "call records: pull failed");
                tokio::time::sleep(RETRY_DELAY).await;
                continue;
            }
        };
        let Some((group, zone)) =
            parse_node_calls_subject(delivery.subject()).map(|(g, z)| (g.to_owned(), z.to_owned()))
        else {
            let _ = delivery.dead_letter("not a node's call-records subject").await;
            continue;
        };
        let (group, zone) = (group.as_str(), zone.as_str());
        let origin = Origin { group, zone, sequence: delivery.stream_sequence() };
        let batch = std::mem::take(&mut delivery.payload);
        match auth.store_calls(origin, batch).await {
            Ok(foreign) => {
                if foreign > 0 {
                    tracing::warn!(
                        group,
                        zone,
                        foreign,
                        "call records naming another placement than their subject were dropped"
                    );
                }
                if let Err(error) = delivery.ack().await {
                    tracing::warn!(%error, "call records stored; the ack failed (a redelivery writes them over themselves)");
                }
            }
            Err(error) if delivery.is_last_attempt() => {
                tracing::error!(%error, group, zone, "call records not stored after every attempt: parked in the dead-letter stream");
                let _ = delivery.dead_letter(&format!("not stored: {error}")).await;
            }
            Err(error) => {
                tracing::warn!(%error, group, zone, "call records not stored yet; retrying");
                let _ = delivery.nak(Some(RETRY_DELAY)).await;
            }
        }
    }
}

impl Auth {
    /// Stores a batch as one write. A record naming another placement than the subject it
    /// came on is dropped and counted (a node can only have written it on purpose); the
    /// count is returned so the caller can log it.
    pub async fn store_calls(
        &self,
        origin: Origin<'_>,
        batch: CallBatch,
    ) -> Result<usize, AuthError> {
        let mut foreign = 0;
        let mut documents = Vec::with_capacity(batch.records.len());
        // Empty group, zone or worker on a record: the batch's, said once for all of them.
        for (index, record) in batch.into_records().into_iter().enumerate() {
            if record.group != origin.group || record.zone != origin.zone {
                foreign += 1;
                continue;
            }
            documents.push((record_id(origin.sequence, index), record));
        }
        self.db.calls.put_many(&documents).await?;
        Ok(foreign)
    }

    pub async fn query_calls(
        &self,
        caller: &Caller,
        request: QueryCallsRequest,
    ) -> Result<QueryCallsResponse, AuthError> {
        if request.group.is_empty() {
            return Err(AuthError::invalid("group", "is required: call records are per group"));
        }
        self.require(caller, &request.group, Action::ReadGroup).await?;
        let mut page = paging::parse_pinned(request.page.as_ref())?;
        let until = page.until_ms.or(request.until.as_ref().map(ms)).unwrap_or(now_ms() + 1);
        page.until_ms = Some(until);
        let mut find = Query::new()
            .eq("group", request.group.as_str())
            .lt("at_ms", until)
            .sort_desc("at_ms")
            .skip(page.offset)
            .limit(page.probe());
        if let Some(since) = request.since.as_ref().map(ms) {
            find = find.gte("at_ms", since);
        }
        for (field, value) in [
            ("environment", &request.environment),
            ("target", &request.target),
            ("caller_id", &request.caller),
        ] {
            if !value.is_empty() {
                find = find.eq(field, value.as_str());
            }
        }
        if let Some(outcome) = outcome_filter(request.outcome)? {
            find = find.eq("outcome", outcome.as_str());
        }
        let mut found: Vec<_> = self.db.calls.find(&find).await?;
        let info = page.finish(&mut found);
        Ok(QueryCallsResponse {
            calls: found.into_iter().map(|v| to_pb(v.id, v.value)).collect(),
            page: Some(info),
        })
    }

    pub async fn call_usage(
        &self,
        caller: &Caller,
        request: CallUsageRequest,
    ) -> Result<CallUsageResponse, AuthError> {
        if request.group.is_empty() {
            return Err(AuthError::invalid("group", "is required: usage is per group"));
        }
        self.require(caller, &request.group, Action::ReadGroup).await?;
        let window = match UsageWindow::try_from(request.window) {
            Ok(UsageWindow::Unspecified) => UsageWindow::Hour,
            Ok(window) => window,
            Err(_) => {
                return Err(AuthError::invalid("window", "must be HOUR, DAY or WEEK"));
            }
        };
        let (span_ms, bucket_ms) = spans(window);
        // Buckets end on a bucket boundary, so a chart redrawn a moment later keeps its bars.
        let until = (now_ms() / bucket_ms + 1) * bucket_ms;
        let since = until - span_ms;
        let mut find = Query::new()
            .eq("group", request.group.as_str())
            .gte("at_ms", since)
            .lt("at_ms", until)
            .sort_desc("at_ms")
            .limit(USAGE_MAX_CALLS + 1);
        if !request.environment.is_empty() {
            find = find.eq("environment", request.environment.as_str());
        }
        let mut records: Vec<CallRecord> =
            self.db.calls.find(&find).await?.into_iter().map(|v| v.value).collect();
        let truncated = records.len() as u64 > USAGE_MAX_CALLS;
        records.truncate(USAGE_MAX_CALLS as usize);
        Ok(summarise(&records, window, since, bucket_ms, span_ms, truncated))
    }
}

/// `(window length, bucket length)` in milliseconds.
fn spans(window: UsageWindow) -> (i64, i64) {
    const MINUTE: i64 = 60_000;
    match window {
        UsageWindow::Day => (24 * 60 * MINUTE, 30 * MINUTE),
        UsageWindow::Week => (7 * 24 * 60 * MINUTE, 6 * 60 * MINUTE),
        UsageWindow::Hour | UsageWindow::Unspecified => (60 * MINUTE, MINUTE),
    }
}

fn summarise(
    records: &[CallRecord],
    window: UsageWindow,
    since: i64,
    bucket_ms: i64,
    span_ms: i64,
    truncated: bool,
) -> CallUsageResponse {
    let buckets = (span_ms / bucket_ms) as usize;
    let slot = |at: i64| (((at - since) / bucket_ms) as usize).min(buckets - 1);
    let mut total = Tally::default();
    let mut per_bucket = vec![Tally::default(); buckets];
    let mut targets: HashMap<(&str, &str), (Tally, Vec<u64>)> = HashMap::new();
    let mut callers: HashMap<&str, (&str, Tally)> = HashMap::new();
    for record in records {
        let bucket = slot(record.at_ms);
        total.add(record);
        per_bucket[bucket].add(record);
        let (tally, counts) = targets
            .entry((record.method.as_str(), record.target.as_str()))
            .or_insert_with(|| (Tally::default(), vec![0; buckets]));
        tally.add(record);
        counts[bucket] += 1;
        callers
            .entry(record.caller_id.as_str())
            .or_insert_with(|| (record.caller_name.as_str(), Tally::default()))
            .1
            .add(record);
    }
    let mut targets: Vec<TargetUsage> = targets
        .into_iter()
        .map(|((method, target), (mut tally, calls_per_bucket))| TargetUsage {
            method: method.to_owned(),
            target: target.to_owned(),
            figures: Some(tally.figures()),
            calls_per_bucket,
        })
        .collect();
    let calls = |f: &Option<UsageFigures>| f.as_ref().map_or(0, |f| f.calls);
    targets.sort_by(|a, b| calls(&b.figures).cmp(&calls(&a.figures)).then(a.target.cmp(&b.target)));
    let mut callers: Vec<CallerUsage> = callers
        .into_iter()
        .map(|(id, (name, mut tally))| CallerUsage {
            caller_id: id.to_owned(),
            caller_name: name.to_owned(),
            figures: Some(tally.figures()),
        })
        .collect();
    callers.sort_by(|a, b| {
        calls(&b.figures).cmp(&calls(&a.figures)).then(a.caller_id.cmp(&b.caller_id))
    });
    callers.truncate(USAGE_CALLERS);
    CallUsageResponse {
        window: window as i32,
        bucket_seconds: (bucket_ms / 1000) as u32,
        since: Some(timestamp(since)),
        until: Some(timestamp(since + span_ms)),
        total: Some(total.figures()),
        buckets: per_bucket
            .iter_mut()
            .enumerate()
            .map(|(i, tally)| UsageBucket {
                start: Some(timestamp(since + i as i64 * bucket_ms)),
                figures: Some(tally.figures()),
            })
            .collect(),
        targets,
        callers,
        truncated,
    }
}

/// Calls, errors and durations of one span.
#[derive(Clone, Debug, Default)]
struct Tally {
    errors: u64,
    durations: Vec<u64>,
}

impl Tally {
    fn add(&mut self, record: &CallRecord) {
        if record.outcome != Outcome::Ok {
            self.errors += 1;
        }
        self.durations.push(record.duration_us);
    }

    fn figures(&mut self) -> UsageFigures {
        self.durations.sort_unstable();
        UsageFigures {
            calls: self.durations.len() as u64,
            errors: self.errors,
            p50_us: percentile(&self.durations, 50),
            p99_us: percentile(&self.durations, 99),
        }
    }
}

/// The nearest-rank percentile of sorted values; 0 for none.
fn percentile(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p as usize * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// The stored id of the `index`th record of the batch at stream `sequence`: zero-padded, so
/// ids sort in arrival order.
pub fn record_id(sequence: u64, index: usize) -> String {
    format!("{sequence:016x}-{index:04x}")
}

/// The outcome a query asks for (`UNSPECIFIED`: any); the inverse of [`outcome_to_pb`].
fn outcome_filter(outcome: i32) -> Result<Option<Outcome>, AuthError> {
    if outcome == CallOutcome::Unspecified as i32 {
        return Ok(None);
    }
    match Outcome::ALL.into_iter().find(|o| outcome_to_pb(*o) as i32 == outcome) {
        Some(found) => Ok(Some(found)),
        None => Err(AuthError::invalid("outcome", format!("{outcome} is no call outcome"))),
    }
}

/// The one mapping from a record's outcome to the wire's.
fn outcome_to_pb(outcome: Outcome) -> CallOutcome {
    match outcome {
        Outcome::Ok => CallOutcome::Ok,
        Outcome::ToolError => CallOutcome::ToolError,
        Outcome::Error => CallOutcome::Error,
        Outcome::Blocked => CallOutcome::Blocked,
        Outcome::Refused => CallOutcome::Refused,
        Outcome::Cancelled => CallOutcome::Cancelled,
        Outcome::Overloaded => CallOutcome::Overloaded,
    }
}

fn to_pb(id: String, r: CallRecord) -> ramen_proto::auth::v1::CallRecord {
    ramen_proto::auth::v1::CallRecord {
        id,
        at: Some(timestamp(r.at_ms)),
        group: r.group,
        environment: r.environment,
        zone: r.zone,
        worker: r.worker,
        caller_id: r.caller_id,
        caller_name: r.caller_name,
        method: r.method,
        target: r.target,
        duration_us: r.duration_us,
        outcome: outcome_to_pb(r.outcome) as i32,
        error_code: r.error_code,
        request_bytes: r.request_bytes,
        response_bytes: r.response_bytes,
        arguments_json: r.arguments.map(|a| a.to_string()).unwrap_or_default(),
    }
}

fn ms(t: &Timestamp) -> i64 {
    t.seconds * 1000 + i64::from(t.nanos) / 1_000_000
}

fn timestamp(ms: i64) -> Timestamp {
    Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(
        at_ms: i64,
        target: &str,
        caller: &str,
        duration_us: u64,
        outcome: Outcome,
    ) -> CallRecord {
        CallRecord {
            at_ms,
            group: "team".into(),
            environment: "prod".into(),
            zone: "local-a".into(),
            worker: "w".into(),
            caller_id: caller.into(),
            caller_name: format!("{caller}-name"),
            method: "tools/call".into(),
            target: target.into(),
            duration_us,
            outcome,
            error_code: 0,
            request_bytes: 1,
            response_bytes: 1,
            arguments: None,
        }
    }

    #[test]
    fn a_summary_buckets_counts_percentiles_and_ranks_targets_and_callers() {
        let since = 1_000_000;
        let minute = 60_000;
        let mut records = Vec::new();
        for n in 0..100u64 {
            let outcome = if n % 10 == 0 { Outcome::ToolError } else { Outcome::Ok };
            records.push(call(since + 5 * minute + n as i64, "notes.add", "k1", n + 1, outcome));
        }
        records.push(call(since, "notes.list", "k2", 7, Outcome::Refused));
        let usage = summarise(&records, UsageWindow::Hour, since, minute, 60 * minute, false);
        assert_eq!(usage.buckets.len(), 60);
        assert_eq!(usage.bucket_seconds, 60);
        let total = usage.total.unwrap();
        assert_eq!((total.calls, total.errors), (101, 11));
        assert_eq!(usage.buckets[5].figures.as_ref().unwrap().calls, 100);
        assert_eq!(usage.buckets[0].figures.as_ref().unwrap().calls, 1);
        assert_eq!(usage.buckets[1].figures.as_ref().unwrap().p99_us, 0, "empty bucket");
        let busiest = &usage.targets[0];
        assert_eq!(busiest.target, "notes.add");
        let figures = busiest.figures.unwrap();
        assert_eq!((figures.p50_us, figures.p99_us), (50, 99));
        assert_eq!(busiest.calls_per_bucket[5], 100);
        assert_eq!(usage.callers[0].caller_id, "k1");
        assert_eq!(usage.callers[1].caller_name, "k2-name");
        assert_eq!(usage.callers[1].figures.unwrap().errors, 1, "a refusal is an error");
    }

    #[test]
    fn ids_sort_in_arrival_order_and_percentiles_take_the_nearest_rank() {
        assert!(record_id(9, 1) < record_id(10, 0));
        assert!(record_id(10, 2) < record_id(10, 10));
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[5], 99), 5);
        assert_eq!(percentile(&[1, 2, 3, 4], 50), 2);
        assert!(outcome_filter(99).is_err());
        assert_eq!(outcome_filter(CallOutcome::Blocked as i32).unwrap(), Some(Outcome::Blocked));
    }
}
