//! The JSON shapes of call records and usage summaries: proto times as RFC 3339, enums as
//! their snake_case words, arguments as the JSON they were recorded as.

use ramen_proto::auth::v1 as pb;
use serde::Serialize;
use utoipa::ToSchema;

use super::views::time;
use super::zone_views::word;

/// How a call ended: the document's list of the words `outcome` takes. Only the document reads
/// the variants; [`Self::parse`] reads the words from the wire's enum, and a test holds the two
/// (and the records' own words) to one list.
#[derive(Clone, Copy, Debug, ToSchema)]
#[allow(dead_code)]
#[schema(rename_all = "snake_case")]
pub enum CallOutcomeWord {
    /// A result.
    Ok,
    /// A `tools/call` result with `isError: true`: the tool ran and reported a failure.
    ToolError,
    /// A JSON-RPC error (`error_code` says which).
    Error,
    /// The package or tool is blocked on the environment or zone.
    Blocked,
    /// The environment's rules do not let the caller call it.
    Refused,
    /// The client cancelled it, or went away.
    Cancelled,
    /// The node was at its in-flight cap.
    Overloaded,
}

impl CallOutcomeWord {
    /// The outcome a query parameter names, by the words the wire's enum spells (as the views
    /// write them); the error names the parameter and the words it takes.
    pub fn parse(field: &str, value: &str) -> Result<pb::CallOutcome, crate::error::ApiError> {
        outcomes().find(|outcome| outcome_word(*outcome) == value).ok_or_else(|| {
            let words: Vec<String> = outcomes().map(outcome_word).collect();
            crate::error::ApiError::invalid(format!(
                "{field}: `{value}` is not one of {}",
                words.join(", ")
            ))
        })
    }
}

/// Every outcome a record can have (the wire's, without `UNSPECIFIED`).
fn outcomes() -> impl Iterator<Item = pb::CallOutcome> {
    (1..).map_while(|n| pb::CallOutcome::try_from(n).ok())
}

fn outcome_word(outcome: pb::CallOutcome) -> String {
    word(outcome.as_str_name(), "CALL_OUTCOME_")
}

/// One MCP call a node answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallView {
    pub id: String,
    /// When the node received the request.
    pub at: Option<String>,
    pub environment: String,
    pub zone: String,
    /// The node that answered.
    pub worker: String,
    /// The MCP key's id, or the OAuth token's subject; empty for an anonymous caller.
    pub caller_id: String,
    /// The key's name, or the token's name for its subject.
    pub caller_name: String,
    /// `tools/call`, `resources/read` or `prompts/get`.
    pub method: String,
    /// The tool, the resource's URI or the prompt.
    pub target: String,
    pub duration_us: u64,
    /// `ok`, `tool_error`, `error`, `blocked`, `refused`, `cancelled` or `overloaded`.
    pub outcome: String,
    /// The JSON-RPC error code when `outcome` is `error`; 0 otherwise.
    pub error_code: i64,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// The arguments, secrets redacted; absent unless the environment records arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

impl From<pb::CallRecord> for CallView {
    fn from(c: pb::CallRecord) -> Self {
        // Auth stores what the node sent as JSON; a string that does not parse is still shown.
        let arguments = (!c.arguments_json.is_empty()).then(|| {
            serde_json::from_str(&c.arguments_json)
                .unwrap_or(serde_json::Value::String(c.arguments_json.clone()))
        });
        Self {
            at: time(c.at.as_ref()),
            outcome: outcome_word(c.outcome()),
            arguments,
            id: c.id,
            environment: c.environment,
            zone: c.zone,
            worker: c.worker,
            caller_id: c.caller_id,
            caller_name: c.caller_name,
            method: c.method,
            target: c.target,
            duration_us: c.duration_us,
            error_code: c.error_code,
            request_bytes: c.request_bytes,
            response_bytes: c.response_bytes,
        }
    }
}

/// Counts and latencies of the calls in one span (a bucket, or the whole window).
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct FiguresView {
    pub calls: u64,
    /// Calls whose outcome was not `ok`.
    pub errors: u64,
    /// 0 when the span holds no call.
    pub p50_us: u64,
    pub p99_us: u64,
}

impl From<Option<pb::UsageFigures>> for FiguresView {
    fn from(f: Option<pb::UsageFigures>) -> Self {
        let f = f.unwrap_or_default();
        Self { calls: f.calls, errors: f.errors, p50_us: f.p50_us, p99_us: f.p99_us }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BucketView {
    pub start: Option<String>,
    pub figures: FiguresView,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TargetUsageView {
    pub method: String,
    pub target: String,
    pub figures: FiguresView,
    /// Calls per bucket, aligned with `buckets`.
    pub calls_per_bucket: Vec<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CallerUsageView {
    pub caller_id: String,
    pub caller_name: String,
    pub figures: FiguresView,
}

/// A group's (or one environment's) calls over a window ending now.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageView {
    /// `hour`, `day` or `week`.
    pub window: String,
    pub bucket_seconds: u32,
    pub since: Option<String>,
    pub until: Option<String>,
    pub total: FiguresView,
    pub buckets: Vec<BucketView>,
    /// Busiest first.
    pub targets: Vec<TargetUsageView>,
    /// The busiest callers, busiest first.
    pub callers: Vec<CallerUsageView>,
    /// True when the window held more calls than one summary reads: the figures are those of
    /// its newest calls.
    pub truncated: bool,
}

impl From<pb::CallUsageResponse> for UsageView {
    fn from(u: pb::CallUsageResponse) -> Self {
        Self {
            window: word(u.window().as_str_name(), "USAGE_WINDOW_"),
            bucket_seconds: u.bucket_seconds,
            since: time(u.since.as_ref()),
            until: time(u.until.as_ref()),
            total: u.total.into(),
            buckets: u
                .buckets
                .into_iter()
                .map(|b| BucketView { start: time(b.start.as_ref()), figures: b.figures.into() })
                .collect(),
            targets: u
                .targets
                .into_iter()
                .map(|t| TargetUsageView {
                    method: t.method,
                    target: t.target,
                    figures: t.figures.into(),
                    calls_per_bucket: t.calls_per_bucket,
                })
                .collect(),
            callers: u
                .callers
                .into_iter()
                .map(|c| CallerUsageView {
                    caller_id: c.caller_id,
                    caller_name: c.caller_name,
                    figures: c.figures.into(),
                })
                .collect(),
            truncated: u.truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words the document lists, the words parsed and shown, and the records' own words
    /// are one list: a new outcome added to one and not the others fails here.
    #[test]
    fn the_documents_words_are_the_wires_and_the_records() {
        let schema = serde_json::to_value(<CallOutcomeWord as utoipa::PartialSchema>::schema());
        let documented: Vec<String> =
            serde_json::from_value(schema.unwrap()["enum"].clone()).unwrap();
        let wire: Vec<String> = outcomes().map(outcome_word).collect();
        let records: Vec<&str> = ramen_call_records::Outcome::ALL.map(|o| o.as_str()).to_vec();
        assert_eq!(documented, wire);
        assert_eq!(wire, records);
        for word in &wire {
            let parsed = CallOutcomeWord::parse("outcome", word).unwrap();
            assert_eq!(&outcome_word(parsed), word);
        }
        let refused = CallOutcomeWord::parse("outcome", "fine").unwrap_err();
        assert!(format!("{refused:?}").contains("ok, tool_error, error"), "{refused:?}");
    }
}
