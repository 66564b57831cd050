//! The JSON shapes of call records and usage summaries: proto times as RFC 3339, enums as
//! their snake_case words, arguments as the JSON they were recorded as.

use ramen_proto::auth::v1 as pb;
use serde::Serialize;
use utoipa::ToSchema;

use super::views::time;
use super::zone_views::word;

/// How a call ended (the document's list of the words `outcome` takes; parsed by [`Self::parse`]
/// so a wrong word is refused naming the parameter).
#[derive(Clone, Copy, Debug, ToSchema)]
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
    /// The word of a query parameter; the error names the parameter and the words it takes.
    pub fn parse(field: &str, value: &str) -> Result<pb::CallOutcome, crate::error::ApiError> {
        let word = match value {
            "ok" => Self::Ok,
            "tool_error" => Self::ToolError,
            "error" => Self::Error,
            "blocked" => Self::Blocked,
            "refused" => Self::Refused,
            "cancelled" => Self::Cancelled,
            "overloaded" => Self::Overloaded,
            _ => {
                return Err(crate::error::ApiError::invalid(format!(
                    "{field}: `{value}` is not one of ok, tool_error, error, blocked, refused, \
                     cancelled, overloaded"
                )));
            }
        };
        Ok(word.wire())
    }

    fn wire(self) -> pb::CallOutcome {
        match self {
            Self::Ok => pb::CallOutcome::Ok,
            Self::ToolError => pb::CallOutcome::ToolError,
            Self::Error => pb::CallOutcome::Error,
            Self::Blocked => pb::CallOutcome::Blocked,
            Self::Refused => pb::CallOutcome::Refused,
            Self::Cancelled => pb::CallOutcome::Cancelled,
            Self::Overloaded => pb::CallOutcome::Overloaded,
        }
    }
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
            outcome: word(c.outcome().as_str_name(), "CALL_OUTCOME_"),
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
