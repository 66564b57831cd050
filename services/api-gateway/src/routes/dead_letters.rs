//! `/api/dead-letters`: deploy work parked after its last delivery failed (super admins):
//! inspect, replay (the job resumes at its interrupted step), discard.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ramen_proto::deployer::v1 as pb;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::views::{Page, PageQuery, next_token, time};
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::Params;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![
        route(Access::SuperAdmin, routes!(list_dead_letters)),
        route(Access::SuperAdmin, routes!(get_dead_letter)),
        route(Access::SuperAdmin, routes!(replay_dead_letter)),
        route(Access::SuperAdmin, routes!(discard_dead_letter)),
    ]
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterView {
    /// Sequence in the dead-letter stream: the handle for inspect, replay and discard.
    pub sequence: u64,
    pub job_id: String,
    pub group: String,
    pub environment: String,
    /// Why it was parked, e.g. `max deliveries (8) exhausted: ...`.
    pub reason: String,
    pub deliveries: u32,
    pub parked_at: Option<String>,
    /// The work item.
    pub payload: Value,
    /// The job's last error.
    pub last_error: String,
}

impl From<pb::DeadLetter> for DeadLetterView {
    fn from(d: pb::DeadLetter) -> Self {
        Self {
            payload: serde_json::from_str(&d.payload_json)
                .unwrap_or(Value::String(d.payload_json.clone())),
            parked_at: time(d.parked_at.as_ref()),
            sequence: d.sequence,
            job_id: d.job_id,
            group: d.group,
            environment: d.environment,
            reason: d.reason,
            deliveries: d.deliveries,
            last_error: d.last_error,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayedView {
    /// The replayed job (same id: it resumes at its interrupted step).
    pub job_id: String,
}

/// Stream sequences start at 1 (JetStream refuses 0 as a bad request, not a missing message).
fn sequence(seq: &str) -> ApiResult<u64> {
    match seq.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ApiError::invalid(format!(
            "seq: `{seq}` is not a sequence number (a whole number from 1)"
        ))),
    }
}

/// Parked deploy work, oldest first.
#[utoipa::path(get, path = "/api/dead-letters", tag = "dead-letters", params(PageQuery),
    responses((status = 200, body = Page<DeadLetterView>)))]
async fn list_dead_letters(
    State(gateway): State<Gateway>,
    authed: Authed,
    Params(page): Params<PageQuery>,
) -> ApiResult<Json<Page<DeadLetterView>>> {
    let request = pb::ListDeadLettersRequest { page: page.to_pb()? };
    let answer =
        gateway.clients().deployer.clone().list_dead_letters(authed.call.request(request)).await?;
    let answer = answer.into_inner();
    Ok(Json(Page {
        items: answer.dead_letters.into_iter().map(DeadLetterView::from).collect(),
        next_page_token: next_token(answer.page),
    }))
}

/// One parked item with its payload and the job's last error.
#[utoipa::path(get, path = "/api/dead-letters/{seq}", tag = "dead-letters", params(("seq" = u64, Path)),
    responses((status = 200, body = DeadLetterView), (status = 404, body = ErrorBody)))]
async fn get_dead_letter(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(seq): Path<String>,
) -> ApiResult<Json<DeadLetterView>> {
    let request = pb::GetDeadLetterRequest { sequence: sequence(&seq)? };
    let letter =
        gateway.clients().deployer.clone().get_dead_letter(authed.call.request(request)).await?;
    Ok(Json(DeadLetterView::from(letter.into_inner())))
}

/// Replays it: the job goes back to `queued` with a full delivery budget. 409 while another
/// deploy of its environment is live.
#[utoipa::path(post, path = "/api/dead-letters/{seq}/replay", tag = "dead-letters", params(("seq" = u64, Path)),
    responses((status = 200, body = ReplayedView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn replay_dead_letter(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(seq): Path<String>,
) -> ApiResult<Json<ReplayedView>> {
    let request = pb::ReplayDeadLetterRequest { sequence: sequence(&seq)? };
    let answer =
        gateway.clients().deployer.clone().replay_dead_letter(authed.call.request(request)).await?;
    Ok(Json(ReplayedView { job_id: answer.into_inner().job_id }))
}

/// Discards it: the job stays `dead_lettered` for good.
#[utoipa::path(delete, path = "/api/dead-letters/{seq}", tag = "dead-letters", params(("seq" = u64, Path)),
    responses((status = 204, description = "Discarded"), (status = 404, body = ErrorBody)))]
async fn discard_dead_letter(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path(seq): Path<String>,
) -> ApiResult<StatusCode> {
    let request = pb::DiscardDeadLetterRequest { sequence: sequence(&seq)? };
    gateway.clients().deployer.clone().discard_dead_letter(authed.call.request(request)).await?;
    Ok(StatusCode::NO_CONTENT)
}
