//! A [`CallBatch`](crate::CallBatch)'s JSON, written by hand.
//!
//! Serialising the batch is most of what recording costs a node (issue 30's benchmark: through
//! serde's generic path ~5k instructions per record, most of a record's cost). The records are
//! flat and their strings nearly never need escaping, so each field is appended directly: a
//! string that needs escaping goes through `serde_json` (the same escapes), everything else
//! is a copy. The output is byte for byte what `serde_json` makes of the same batch, which the
//! tests check, so the reader (auth's `Deserialize`) sees no difference.

use std::fmt::Write as _;

use crate::CallRecord;

/// `CallBatch` JSON for `records` answered by `worker` in `group` / `zone`: what
/// `serde_json::to_string(&CallBatch { group, zone, worker, records })` makes, without
/// copying the records into a batch first.
pub fn batch_json(group: &str, zone: &str, worker: &str, records: &[CallRecord]) -> String {
    // ~230 bytes per record without arguments: one allocation for a typical batch.
    let mut out = String::with_capacity(64 + records.len() * 256);
    out.push_str("{\"group\":");
    string(&mut out, group);
    out.push_str(",\"zone\":");
    string(&mut out, zone);
    out.push_str(",\"worker\":");
    string(&mut out, worker);
    out.push_str(",\"records\":[");
    for (n, record) in records.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        record_json(&mut out, record);
    }
    out.push_str("]}");
    out
}

/// One record, fields in declaration order, skipping what `CallRecord`'s serde attributes skip.
fn record_json(out: &mut String, r: &CallRecord) {
    out.push_str("{\"at_ms\":");
    number(out, r.at_ms);
    optional_string(out, ",\"group\":", &r.group);
    out.push_str(",\"environment\":");
    string(out, &r.environment);
    optional_string(out, ",\"zone\":", &r.zone);
    optional_string(out, ",\"worker\":", &r.worker);
    out.push_str(",\"caller_id\":");
    string(out, &r.caller_id);
    out.push_str(",\"caller_name\":");
    string(out, &r.caller_name);
    out.push_str(",\"method\":");
    string(out, &r.method);
    out.push_str(",\"target\":");
    string(out, &r.target);
    out.push_str(",\"duration_us\":");
    number(out, r.duration_us);
    out.push_str(",\"outcome\":\"");
    out.push_str(r.outcome.as_str());
    out.push('"');
    if r.error_code != 0 {
        out.push_str(",\"error_code\":");
        number(out, r.error_code);
    }
    out.push_str(",\"request_bytes\":");
    number(out, r.request_bytes);
    out.push_str(",\"response_bytes\":");
    number(out, r.response_bytes);
    if let Some(arguments) = &r.arguments {
        out.push_str(",\"arguments\":");
        // A `Value` serialises infallibly; `Display` is serde_json's compact form.
        let _ = write!(out, "{arguments}");
    }
    out.push('}');
}

fn optional_string(out: &mut String, key: &str, value: &str) {
    if !value.is_empty() {
        out.push_str(key);
        string(out, value);
    }
}

fn number(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// A JSON string. Names, ids and tools need no escaping, so they are copied; anything with a
/// quote, a backslash or a control character is escaped by `serde_json` itself.
fn string(out: &mut String, value: &str) {
    if value.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        // Serialising a `str` cannot fail.
        out.push_str(&serde_json::to_string(value).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(value);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallBatch, Outcome};

    /// A record as a node sends it: group, zone and worker left to the batch.
    fn record(n: i64) -> CallRecord {
        CallRecord {
            at_ms: 1_764_000_000_000 + n,
            group: String::new(),
            zone: String::new(),
            worker: String::new(),
            ..crate::tests::record(n)
        }
    }

    fn serde_batch(group: &str, zone: &str, worker: &str, records: &[CallRecord]) -> String {
        let batch = CallBatch {
            group: group.into(),
            zone: zone.into(),
            worker: worker.into(),
            records: records.to_vec(),
        };
        serde_json::to_string(&batch).unwrap()
    }

    #[test]
    fn a_batch_is_byte_for_byte_what_serde_makes_of_it() {
        let mut records: Vec<CallRecord> = Outcome::ALL
            .into_iter()
            .enumerate()
            .map(|(n, outcome)| CallRecord { outcome, ..record(n as i64) })
            .collect();
        // Every optional field present, negative and extreme numbers.
        records[2].error_code = -32601;
        records[3].group = "team".into();
        records[3].zone = "local-a".into();
        records[3].worker = "worker-0".into();
        records[4].at_ms = i64::MIN;
        records[4].duration_us = u64::MAX;
        records[5].error_code = i64::MAX;
        records[6].arguments = Some(serde_json::json!({
            "text": "a \"quoted\"\nline\twith \\ and \u{1} and é ☃",
            "n": [1, 2.5, -3, null, true],
            "nested": {"k": "v"},
        }));
        // Strings that need every kind of escape, and some that need none but look close.
        records[0].caller_name = "Ada \"the\" admin\\\u{7}\u{1f}\r\n\t\u{8}\u{c}".into();
        records[1].target = "weird:/x?q=\u{7f}é☃ 🦀".into();
        records[2].caller_id = String::new();
        records[2].environment = String::new();
        let cases = [
            ("team", "local-a", "worker-0", records.as_slice()),
            ("g", "z", "w", &records[..1]),
            ("", "", "", &[][..]),
            ("g\"x", "z\\", "w\n", &records[6..]),
        ];
        for (group, zone, worker, records) in cases {
            let ours = batch_json(group, zone, worker, records);
            assert_eq!(ours, serde_batch(group, zone, worker, records));
            let back: CallBatch = serde_json::from_str(&ours).unwrap();
            assert_eq!(back.records, records, "the reader gets every record back");
        }
    }
}
