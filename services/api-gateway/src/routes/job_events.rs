//! `GET /api/groups/{group}/jobs/{job}/events`: the deployer's `WatchJob` stream relayed as
//! server-sent events. Each message is `event: job` with the whole job as JSON (the same shape
//! as `GET .../jobs/{job}`), so a client needs no merge logic: the last message is the truth.
//! The stream ends after the job's terminal state; a failure of the upstream stream is sent as
//! `event: error` with the API's error body before the end. Browsers' `EventSource` cannot set
//! headers, hence `?t=<access token>` on this route.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use ramen_proto::common::v1::JobState;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::watch_job_response::Update;
use tonic::Streaming;
use utoipa_axum::routes;

use super::job_views::{JobView, apply};
use super::jobs::job_of;
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::clients::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::Member, routes!(job_events)).streaming()]
}

fn terminal(state: i32) -> bool {
    use JobState::*;
    matches!(JobState::try_from(state), Ok(Succeeded | Failed | Cancelled | DeadLettered))
}

fn job_event(job: &pb::DeployJob) -> Event {
    let view = JobView::from(job.clone());
    Event::default().event("job").json_data(&view).unwrap_or_else(|_| Event::default().event("job"))
}

fn error_event(error: ApiError) -> Event {
    let body = serde_json::json!({ "error": { "code": error.code, "message": error.message } });
    Event::default().event("error").data(body.to_string())
}

/// What the relay holds between two messages.
struct Relay {
    upstream: Streaming<pb::WatchJobResponse>,
    job: pb::DeployJob,
    gateway: Gateway,
    call: Caller,
    done: bool,
}

impl Relay {
    /// The next event, or `None` once the job finished (or the upstream ended or failed).
    async fn next(mut self) -> Option<(Event, Relay)> {
        if self.done {
            return None;
        }
        match self.upstream.message().await {
            Ok(Some(message)) => {
                let Some(update) = message.update else {
                    return Some((Event::default().comment(""), self));
                };
                let finished = matches!(&update, Update::State(s) if terminal(s.state));
                apply(&mut self.job, update);
                if finished {
                    self.done = true;
                    // The stored job also has the zones' final status and the finish time.
                    let (group, id) = (self.job.group.clone(), self.job.id.clone());
                    if let Ok(job) = job_of(&self.gateway, &self.call, &group, &id).await {
                        self.job = job;
                    }
                }
                Some((job_event(&self.job), self))
            }
            Ok(None) => None,
            Err(status) => {
                self.done = true;
                Some((error_event(ApiError::from(status)), self))
            }
        }
    }
}

/// Live progress of a job as server-sent events (`event: job`, the whole job each time),
/// ending after its terminal state.
#[utoipa::path(get, path = "/api/groups/{group}/jobs/{job}/events", tag = "deploys",
    params(("group" = String, Path), ("job" = String, Path),
        ("t" = Option<String>, Query, description = "Access token, for clients that cannot set headers")),
    responses((status = 200, content_type = "text/event-stream", body = JobView,
        description = "`event: job` messages, each the whole job"), (status = 404, body = ErrorBody)))]
async fn job_events(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, job_id)): Path<(String, String)>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let request = pb::WatchJobRequest { job_id: job_id.clone() };
    let mut upstream = gateway
        .clients()
        .deployer
        .clone()
        .watch_job(authed.call.request(request))
        .await?
        .into_inner();
    // The first message is the snapshot: it says whose job this is before anything is sent.
    let job = match upstream.message().await? {
        Some(pb::WatchJobResponse { update: Some(Update::Snapshot(job)) }) => job,
        _ => {
            return Err(ApiError::internal("the deployer's job stream did not start with the job"));
        }
    };
    if job.group != group {
        return Err(ApiError::not_found(format!("job `{job_id}` not found in group `{group}`")));
    }
    let first = job_event(&job);
    let done = terminal(job.state);
    let relay = Relay { upstream, job, gateway, call: authed.call, done };
    let rest = futures::stream::unfold(relay, Relay::next);
    let stream = futures::StreamExt::map(
        futures::StreamExt::chain(futures::stream::once(async move { first }), rest),
        Ok,
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
