//! Deploys and their jobs: start (refused with 409 while another deploy of the environment is
//! live), list, inspect with per-zone step logs, cancel. The live stream is `job_events.rs`.
//!
//! A job is addressed by id alone in the deployer; the gateway checks it belongs to the
//! `{group}` of the path, so a URL never shows one group's job under another group's name.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::JobState;
use ramen_proto::deployer::v1 as pb;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::routes;

use super::job_views::JobView;
use super::views::{Page, PageQuery, next_token};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::clients::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{OptionalBody, Params};
use crate::state::Gateway;

const DEPLOY: Access = Access::GroupAdmin(Action::Deploy);

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(DEPLOY, routes!(start_deploy)),
        route(Access::Member, routes!(list_jobs)),
        route(Access::Member, routes!(get_job)),
        route(DEPLOY, routes!(cancel_job)),
        route(DEPLOY, routes!(approve_job)),
        route(DEPLOY, routes!(reject_job)),
    ]
}

#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeployBody {
    /// Absent = the environment's ref. Rollback = deploying an older ref.
    pub git_ref: Option<String>,
    /// The same key returns the same job (a double-submitted deploy starts once).
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobQuery {
    /// Only this environment's jobs.
    #[serde(default)]
    pub environment: String,
    /// Comma-separated states (`running,queued`); absent = any.
    #[serde(default)]
    pub state: String,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
}

/// The job states a `state` filter names, as the document's pattern ([`states_pattern`]) has
/// them: exact lowercase words, comma-separated; empty = any.
pub const JOB_STATES: [&str; 8] = [
    "queued",
    "running",
    "review",
    "succeeded",
    "failed",
    "failed_resumable",
    "cancelled",
    "dead_lettered",
];

/// [`JOB_STATES`] as the query's pattern.
pub fn states_pattern() -> String {
    let one = format!("({})", JOB_STATES.join("|"));
    format!("^({one}(,{one})*)?$")
}

fn parse_states(states: &str) -> ApiResult<Vec<i32>> {
    if states.is_empty() {
        return Ok(Vec::new());
    }
    states
        .split(',')
        .map(|s| {
            let known = JOB_STATES.contains(&s);
            let state = JobState::from_str_name(&format!("JOB_STATE_{}", s.to_ascii_uppercase()));
            state.filter(|_| known).map(|s| s as i32).ok_or_else(|| {
                ApiError::invalid(format!(
                    "state: `{s}` is not a job state (comma-separated, of {})",
                    JOB_STATES.join(", ")
                ))
            })
        })
        .collect()
}

/// The job `job_id` if it belongs to `group`; 404 otherwise.
pub(super) async fn job_of(
    gateway: &Gateway,
    call: &Caller,
    group: &str,
    job_id: &str,
) -> ApiResult<pb::DeployJob> {
    let request = pb::GetJobRequest { job_id: job_id.to_owned() };
    let job = gateway.clients().deployer.clone().get_job(call.request(request)).await?.into_inner();
    if job.group != group {
        return Err(ApiError::not_found(format!("job `{job_id}` not found in group `{group}`")));
    }
    Ok(job)
}

/// Starts a deploy (canary first) and answers with the job: 201, or 200 when the idempotency
/// key matched an existing job.
#[utoipa::path(post, path = "/api/groups/{group}/environments/{env}/deploys", tag = "deploys",
    params(("group" = String, Path), ("env" = String, Path)), request_body = DeployBody,
    responses((status = 201, body = JobView), (status = 200, body = JobView),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn start_deploy(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, environment)): Path<(String, String)>,
    OptionalBody(body): OptionalBody<DeployBody>,
) -> ApiResult<(StatusCode, Json<JobView>)> {
    let request = pb::StartDeployRequest {
        group: group.clone(),
        environment,
        git_ref: body.git_ref.unwrap_or_default(),
        idempotency_key: body.idempotency_key.unwrap_or_default(),
    };
    let started = gateway
        .clients()
        .deployer
        .clone()
        .start_deploy(authed.call.request(request))
        .await?
        .into_inner();
    // StartDeploy answers the job itself: no GetJob after it.
    let job = started
        .job
        .ok_or_else(|| ApiError::internal("the deployer answered StartDeploy without the job"))?;
    let status = if started.deduplicated { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(JobView::from(job))))
}

/// The group's deploy jobs, newest first (step logs left out).
#[utoipa::path(get, path = "/api/groups/{group}/jobs", tag = "deploys",
    params(("group" = String, Path), JobQuery),
    responses((status = 200, body = Page<JobView>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn list_jobs(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(group): Path<String>,
    Params(query): Params<JobQuery>,
) -> ApiResult<Json<Page<JobView>>> {
    super::views::filter_label("environment", &query.environment)?;
    let page = PageQuery { page_size: query.page_size, page_token: query.page_token };
    let request = pb::ListJobsRequest {
        group,
        environment: query.environment,
        states: parse_states(&query.state)?,
        page: page.to_pb()?,
    };
    let answer = gateway.clients().deployer.clone().list_jobs(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer.jobs.into_iter().map(JobView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// One job: per zone, per step, with outcome, errors, stuck workers and log lines.
#[utoipa::path(get, path = "/api/groups/{group}/jobs/{job}", tag = "deploys",
    params(("group" = String, Path), ("job" = String, Path)),
    responses((status = 200, body = JobView), (status = 404, body = ErrorBody)))]
async fn get_job(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, job)): Path<(String, String)>,
) -> ApiResult<Json<JobView>> {
    Ok(Json(JobView::from(job_of(&gateway, &authed.call, &group, &job).await?)))
}

/// Cancels a job. Terminal, and it wins over a resumable failure; a running job stops at its
/// next step boundary (`cancel_requested` until then). 409 on a job that already finished.
#[utoipa::path(post, path = "/api/groups/{group}/jobs/{job}/cancel", tag = "deploys",
    params(("group" = String, Path), ("job" = String, Path)),
    responses((status = 200, body = JobView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn cancel_job(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, job)): Path<(String, String)>,
) -> ApiResult<Json<JobView>> {
    job_of(&gateway, &authed.call, &group, &job).await?;
    let reason = format!("cancelled by {}", authed.caller.email);
    let request = pb::CancelJobRequest { job_id: job, reason };
    let job = gateway.clients().deployer.clone().cancel_job(authed.call.request(request)).await?;
    Ok(Json(JobView::from(job.into_inner())))
}

/// A review decision's optional note, kept with the decision and in the audit log.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewBody {
    /// Why (up to 500 characters).
    #[serde(default)]
    pub reason: String,
}

/// Approves the surface change a job waits on (state `review`): stable takes the canary's
/// surface. 409 when the job has no review open.
#[utoipa::path(post, path = "/api/groups/{group}/jobs/{job}/approve", tag = "deploys",
    params(("group" = String, Path), ("job" = String, Path)), request_body = ReviewBody,
    responses((status = 200, body = JobView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn approve_job(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, job)): Path<(String, String)>,
    OptionalBody(body): OptionalBody<ReviewBody>,
) -> ApiResult<Json<JobView>> {
    decide(&gateway, &authed, &group, job, true, body).await
}

/// Rejects the surface change a job waits on: the canary scales to zero as after any failure,
/// and stable stays as it is. 409 when the job has no review open.
#[utoipa::path(post, path = "/api/groups/{group}/jobs/{job}/reject", tag = "deploys",
    params(("group" = String, Path), ("job" = String, Path)), request_body = ReviewBody,
    responses((status = 200, body = JobView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn reject_job(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, job)): Path<(String, String)>,
    OptionalBody(body): OptionalBody<ReviewBody>,
) -> ApiResult<Json<JobView>> {
    decide(&gateway, &authed, &group, job, false, body).await
}

async fn decide(
    gateway: &Gateway,
    authed: &Authed,
    group: &str,
    job: String,
    approve: bool,
    body: ReviewBody,
) -> ApiResult<Json<JobView>> {
    job_of(gateway, &authed.call, group, &job).await?;
    let request = pb::DecideReviewRequest { job_id: job, approve, reason: body.reason };
    let job =
        gateway.clients().deployer.clone().decide_review(authed.call.request(request)).await?;
    Ok(Json(JobView::from(job.into_inner())))
}
