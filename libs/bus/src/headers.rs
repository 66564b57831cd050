//! Header names and the trace-context hooks. The bus stays free of OpenTelemetry: the
//! telemetry crate installs a [`set_traceparent_source`] function once at start-up, and
//! consumers hand [`Delivery::traceparent`](crate::Delivery::traceparent) to it.

use std::sync::OnceLock;

use async_nats::HeaderMap;

use crate::subject::{Schema, parse_schema_header};

/// `<schema name>;v=<version>` of the JSON payload.
pub const SCHEMA: &str = "Ramen-Schema";
/// W3C trace context of the publishing span.
pub const TRACEPARENT: &str = "traceparent";
/// JetStream's dedupe key, honoured within the stream's duplicate window.
pub const MSG_ID: &str = "Nats-Msg-Id";
/// Why a message was parked in a dead-letter stream.
pub const DLQ_REASON: &str = "Ramen-Dlq-Reason";
/// How many times it had been delivered when it was parked.
pub const DLQ_DELIVERIES: &str = "Ramen-Dlq-Deliveries";
/// Where it came from: subject, stream, stream sequence and `Nats-Msg-Id`.
pub const ORIGINAL_SUBJECT: &str = "Ramen-Original-Subject";
pub const ORIGINAL_STREAM: &str = "Ramen-Original-Stream";
pub const ORIGINAL_SEQUENCE: &str = "Ramen-Original-Sequence";
pub const ORIGINAL_MSG_ID: &str = "Ramen-Original-Msg-Id";

static TRACEPARENT_SOURCE: OnceLock<fn() -> Option<String>> = OnceLock::new();

/// Installs the function that yields the current span's `traceparent`; used when a publish
/// does not pass one explicitly. Only the first call takes effect.
pub fn set_traceparent_source(source: fn() -> Option<String>) {
    let _ = TRACEPARENT_SOURCE.set(source);
}

/// Writes `traceparent` (the explicit one, else the installed source's) into `headers`.
pub fn inject_trace(headers: &mut HeaderMap, explicit: Option<&str>) {
    let value = explicit.map(str::to_owned).or_else(|| TRACEPARENT_SOURCE.get().and_then(|f| f()));
    if let Some(value) = value {
        headers.insert(TRACEPARENT, value.as_str());
    }
}

/// The `traceparent` a message carries, if any.
pub fn extract_trace(headers: &HeaderMap) -> Option<String> {
    get(headers, TRACEPARENT)
}

/// The last value of a header, as a string.
pub fn get(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_last(name).map(|v| v.as_str().to_owned())
}

/// The schema name and version a message carries.
pub fn schema_of(headers: &HeaderMap) -> Option<(String, u32)> {
    get(headers, SCHEMA).map(|v| parse_schema_header(&v))
}

/// The schema name alone, borrowed: what every received message is checked against, so the
/// check allocates nothing.
pub(crate) fn schema_name_of(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get_last(SCHEMA)?.as_str();
    Some(value.split_once(";v=").map_or(value, |(name, _)| name))
}

/// The headers every ramen publish carries: caller's extras, schema, trace and dedupe id.
pub(crate) fn outgoing(
    schema: Schema,
    extra: Option<&HeaderMap>,
    traceparent: Option<&str>,
    msg_id: Option<&str>,
) -> HeaderMap {
    let mut headers = extra.cloned().unwrap_or_default();
    headers.insert(SCHEMA, schema.header_value().as_str());
    inject_trace(&mut headers, traceparent);
    if let Some(id) = msg_id {
        headers.insert(MSG_ID, id);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outgoing_headers_carry_schema_trace_and_id() {
        let mut extra = HeaderMap::new();
        extra.insert("X-Team", "g1");
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let h = outgoing(Schema::new("a.B", 2), Some(&extra), Some(tp), Some("id-1"));
        assert_eq!(schema_of(&h), Some(("a.B".to_owned(), 2)));
        assert_eq!(schema_name_of(&h), Some("a.B"));
        assert_eq!(extract_trace(&h).as_deref(), Some(tp));
        assert_eq!(get(&h, MSG_ID).as_deref(), Some("id-1"));
        assert_eq!(get(&h, "X-Team").as_deref(), Some("g1"));
    }
}
