//! Audit entries of rebalance actions. Each entry of an action has a fixed id, so an append
//! retried (or raced by two replicas) is stored once. An audit write that fails is logged; it
//! never undoes the rebalance.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{ActionRecord, ActionState, Rebalancer};
use crate::error::Error;
use crate::model::Caller;
use crate::ports::AuditRecord;

const AUDIT_TIMEOUT: Duration = Duration::from_secs(3);
pub const ACTION: &str = "placement.rebalance";

fn state_name(state: ActionState) -> &'static str {
    match state {
        ActionState::Pending => "pending",
        ActionState::Applied => "applied",
        ActionState::Failed => "failed",
        ActionState::Expired => "expired",
    }
}

fn details(id: &str, record: &ActionRecord) -> BTreeMap<String, String> {
    let weights: Vec<String> =
        record.targets.iter().map(|t| format!("{}={}", t.target, t.weight)).collect();
    BTreeMap::from([
        ("action_id".to_owned(), id.to_owned()),
        ("provider".to_owned(), record.provider.name().to_owned()),
        ("applied".to_owned(), (record.state == ActionState::Applied).to_string()),
        ("state".to_owned(), state_name(record.state).to_owned()),
        ("note".to_owned(), record.note.clone()),
        ("weights_permille".to_owned(), weights.join(",")),
        ("attempts".to_owned(), record.attempts.to_string()),
    ])
}

impl Rebalancer {
    pub(crate) async fn append_audit(&self, entry: AuditRecord) {
        let action = entry.action.clone();
        match tokio::time::timeout(AUDIT_TIMEOUT, self.audit.append(entry)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(%err, action, "audit entry not appended"),
            Err(_) => {
                tracing::warn!(action, "audit entry not appended: auth did not answer in time")
            }
        }
    }

    /// The request itself: applied, pending (`applied=false`) or failed.
    pub(super) async fn audit_request(&self, id: &str, record: &ActionRecord) {
        self.append_audit(AuditRecord {
            id: format!("rebalance:{id}:request"),
            actor: record.actor.clone(),
            action: ACTION.to_owned(),
            group: record.group.clone(),
            target: format!("zone/{}", record.zone),
            success: record.state != ActionState::Failed,
            request_id: record.request_id.clone(),
            details: details(id, record),
        })
        .await;
    }

    /// The final outcome of an action the background retries settled.
    pub(super) async fn audit_outcome(&self, id: &str, record: &ActionRecord) {
        let state = state_name(record.state);
        self.append_audit(AuditRecord {
            id: format!("rebalance:{id}:{state}"),
            actor: record.actor.clone(),
            action: format!("{ACTION}.{state}"),
            group: record.group.clone(),
            target: format!("zone/{}", record.zone),
            success: record.state == ActionState::Applied,
            request_id: record.request_id.clone(),
            details: details(id, record),
        })
        .await;
    }

    /// A request refused before anything was applied.
    pub(super) async fn audit_refusal(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        err: &Error,
    ) {
        self.append_audit(AuditRecord {
            id: uuid::Uuid::now_v7().to_string(),
            actor: caller.actor.clone(),
            action: ACTION.to_owned(),
            group: group.to_owned(),
            target: format!("zone/{zone}"),
            success: false,
            request_id: caller.request_id.clone(),
            details: BTreeMap::from([("error".to_owned(), err.to_string())]),
        })
        .await;
    }
}
