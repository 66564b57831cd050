//! Applying an action's weights, recording each attempt, and retrying in the background while
//! the balancer reconciles. A pending action is retried by the replica that owns it; the
//! scheduler leader adopts pending actions whose owner went quiet (it died).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ActionRecord, ActionState, Rebalancer};
use crate::error::Result;
use crate::lb::{Applied, ZoneRef};
use crate::model::{Caller, now_ms};

/// Bound on one `apply` (a cloud API that hangs is an attempt that failed, not a stuck task).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// The retry pause doubles up to this.
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// A pending action whose owner wrote nothing for this long is adopted: well above the
/// longest quiet spell of a live owner (one pause plus one attempt).
const STALE_AFTER: Duration = Duration::from_secs(120);

#[derive(Clone, Debug)]
pub(super) enum Step {
    Applied(String),
    Waiting { note: String, ticket: Option<String> },
    Failed(String),
    Expired,
}

impl Rebalancer {
    pub(super) async fn attempt(&self, record: &ActionRecord) -> Step {
        let zone = ZoneRef {
            group: record.group.clone(),
            zone: record.zone.clone(),
            provider: record.provider,
            region: record.region.clone(),
        };
        // The user was authorized when the action was created; applying it (now or on a later
        // retry) is the rebalancer's own work, audited here as the user.
        let caller =
            Caller::new(ramen_proto::metadata::ACTOR_REBALANCER, record.request_id.clone());
        let balancer = self.balancers.for_provider(record.provider);
        let weights = record.weights();
        let apply = balancer.apply(&caller, &zone, &weights, record.ticket.as_deref());
        match tokio::time::timeout(ATTEMPT_TIMEOUT, apply).await {
            Err(_) => Step::Waiting {
                note: format!(
                    "the load balancer did not answer within {ATTEMPT_TIMEOUT:?}; retrying"
                ),
                ticket: record.ticket.clone(),
            },
            Ok(Ok(Applied::Done(note))) => Step::Applied(note),
            Ok(Ok(Applied::Reconciling { note, ticket })) => Step::Waiting { note, ticket },
            Ok(Err(err)) if err.is_retryable() => {
                Step::Waiting { note: format!("{err}; retrying"), ticket: record.ticket.clone() }
            }
            Ok(Err(err)) => Step::Failed(err.to_string()),
        }
    }

    /// Records `step`. The flag says whether this call made the action final, so exactly one
    /// writer audits and announces the outcome.
    pub(super) async fn settle(&self, id: &str, step: Step) -> Result<(ActionRecord, bool)> {
        let replica = self.replica.clone();
        let (record, finalized) = self
            .actions
            .modify(id, |r| {
                if r.is_final() {
                    return false;
                }
                r.updated_ms = now_ms();
                r.owner = replica.clone();
                match step.clone() {
                    Step::Applied(note) => (r.state, r.note, r.attempts) = (ActionState::Applied, note, r.attempts + 1),
                    Step::Waiting { note, ticket } => (r.note, r.ticket, r.attempts) = (note, ticket, r.attempts + 1),
                    Step::Failed(note) => (r.state, r.note, r.attempts) = (ActionState::Failed, note, r.attempts + 1),
                    Step::Expired => {
                        r.note = format!("gave up: the retry deadline passed before the load balancer applied the weights (last: {})", r.note);
                        r.state = ActionState::Expired;
                    }
                }
                r.is_final()
            })
            .await?;
        Ok((record, finalized))
    }

    pub(super) fn spawn_retry(self: &Arc<Self>, id: String) {
        let this = self.clone();
        self.tasks.spawn(format!("rebalance-retry:{id}"), move |stop| async move {
            this.retry_loop(&id, stop).await
        });
    }

    async fn retry_loop(&self, id: &str, stop: CancellationToken) {
        let mut pause = self.settings.retry_interval;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
            match self.retry_once(id).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(err) => {
                    tracing::warn!(%err, action = id, "rebalance retry could not be recorded")
                }
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// One retry; `true` when there is nothing more to do here.
    async fn retry_once(&self, id: &str) -> Result<bool> {
        let Some(record) = self.actions.get(id).await? else { return Ok(true) };
        if record.is_final() || record.owner != self.replica {
            return Ok(true);
        }
        let step =
            if now_ms() > record.deadline_ms { Step::Expired } else { self.attempt(&record).await };
        let (record, finalized) = self.settle(id, step).await?;
        if finalized {
            self.audit_outcome(id, &record).await;
            self.events.rebalance_applied(id, &record).await;
        }
        Ok(record.is_final())
    }

    /// Takes over pending actions whose owner went quiet; returns how many.
    pub async fn adopt_stale(self: &Arc<Self>) -> Result<usize> {
        let stale_before = now_ms() - STALE_AFTER.as_millis() as i64;
        let mut adopted = 0;
        for (id, record) in self.actions.pending().await? {
            if record.owner == self.replica || record.updated_ms >= stale_before {
                continue;
            }
            let replica = self.replica.clone();
            let (_, took) = self
                .actions
                .modify(&id, |r| {
                    let stale = r.state == ActionState::Pending
                        && r.owner != replica
                        && r.updated_ms < stale_before;
                    if stale {
                        (r.owner, r.updated_ms) = (replica.clone(), now_ms());
                    }
                    stale
                })
                .await?;
            if took {
                tracing::info!(action = %id, previous = %record.owner, "adopted a pending rebalance");
                self.spawn_retry(id);
                adopted += 1;
            }
        }
        Ok(adopted)
    }
}
