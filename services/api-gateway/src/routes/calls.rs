//! Call records and usage (issue 30): every MCP call the group's nodes answered, newest first
//! (`/api/groups/{group}/calls`), and the same calls summed up over an hour, a day or a week
//! (`/api/groups/{group}/usage`). Auth keeps the records; members of the group read them.

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1 as pb;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::routes;

use super::call_views::{CallOutcomeWord, CallView, UsageView};
use super::views::Page;
use super::views::{PageQuery, filter_label, next_token, parse_time};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::Params;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::Member, routes!(query_calls)), route(Access::Member, routes!(call_usage))]
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallsQuery {
    /// Only this environment.
    #[serde(default)]
    pub environment: String,
    /// Only this tool, resource URI or prompt, exactly.
    #[serde(default)]
    pub tool: String,
    /// Only this caller: an MCP key's id or an OAuth token's subject, exactly.
    #[serde(default)]
    pub caller: String,
    /// Only calls that ended this way.
    #[param(inline, value_type = Option<CallOutcomeWord>)]
    pub outcome: Option<String>,
    /// RFC 3339, inclusive.
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// RFC 3339, exclusive.
    #[param(format = DateTime)]
    pub until: Option<String>,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// Only this environment; absent = every environment of the group.
    #[serde(default)]
    pub environment: String,
    /// `hour` (1-minute buckets; also when empty or absent), `day` (30-minute buckets) or
    /// `week` (6-hour buckets), ending now.
    #[param(inline, value_type = Option<String>, pattern = "^(hour|day|week)?$")]
    pub window: Option<String>,
}

/// The group's call records, newest first: who called which tool, resource or prompt, when,
/// how long it took and how it ended. Arguments only where the environment records them.
#[utoipa::path(get, path = "/api/groups/{group}/calls", tag = "calls",
    params(("group" = String, Path), CallsQuery),
    responses((status = 200, body = Page<CallView>), (status = 404, body = ErrorBody)))]
async fn query_calls(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(query): Params<CallsQuery>,
) -> ApiResult<Json<Page<CallView>>> {
    filter_label("environment", &query.environment)?;
    let outcome = match query.outcome.as_deref() {
        None | Some("") => pb::CallOutcome::Unspecified,
        Some(word) => CallOutcomeWord::parse("outcome", word)?,
    };
    let since = query.since.as_deref().map(|t| parse_time("since", t)).transpose()?;
    let until = query.until.as_deref().map(|t| parse_time("until", t)).transpose()?;
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::QueryCallsRequest {
        group,
        environment: query.environment,
        target: query.tool,
        caller: query.caller,
        outcome: outcome as i32,
        since,
        until,
        page: page.to_pb()?,
    };
    let answer = gateway
        .clients()
        .auth
        .clone()
        .query_calls(authed.call.request(request))
        .await?
        .into_inner();
    Ok(Json(Page {
        items: answer.calls.into_iter().map(CallView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// The group's calls over the last hour, day or week: per bucket (calls, errors, p50/p99),
/// per tool, resource or prompt (with its calls per bucket), and the busiest callers.
#[utoipa::path(get, path = "/api/groups/{group}/usage", tag = "calls",
    params(("group" = String, Path), UsageQuery),
    responses((status = 200, body = UsageView), (status = 404, body = ErrorBody)))]
async fn call_usage(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(query): Params<UsageQuery>,
) -> ApiResult<Json<UsageView>> {
    filter_label("environment", &query.environment)?;
    let window = parse_window(query.window.as_deref().unwrap_or("hour"))?;
    let request =
        pb::CallUsageRequest { group, environment: query.environment, window: window as i32 };
    let answer =
        gateway.clients().auth.clone().call_usage(authed.call.request(request)).await?.into_inner();
    Ok(Json(UsageView::from(answer)))
}

fn parse_window(value: &str) -> Result<pb::UsageWindow, ApiError> {
    match value {
        "hour" | "" => Ok(pb::UsageWindow::Hour),
        "day" => Ok(pb::UsageWindow::Day),
        "week" => Ok(pb::UsageWindow::Week),
        _ => Err(ApiError::invalid(format!("window: `{value}` is not one of hour, day, week"))),
    }
}
