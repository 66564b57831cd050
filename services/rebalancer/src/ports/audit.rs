//! [`AuditPort`] over auth's `AppendAudit`.

use std::sync::Arc;

use async_trait::async_trait;
use ramen_clients::AuthClient;
use ramen_proto::auth::v1::{AppendAuditRequest, AuditEntry};
use ramen_proto::common::v1::AuditOutcome;

use super::{AuditPort, AuditRecord, PortError};
use crate::model::Caller;

pub struct GrpcAudit {
    auth: Arc<dyn AuthClient>,
}

impl GrpcAudit {
    pub fn new(auth: Arc<dyn AuthClient>) -> Self {
        Self { auth }
    }
}

#[async_trait]
impl AuditPort for GrpcAudit {
    async fn append(&self, entry: AuditRecord) -> Result<(), PortError> {
        let caller = Caller::new(entry.actor.clone(), entry.request_id.clone());
        let outcome = if entry.success { AuditOutcome::Success } else { AuditOutcome::Failure };
        let entry = AuditEntry {
            id: entry.id,
            actor: entry.actor,
            action: entry.action,
            group: entry.group,
            target: entry.target,
            outcome: outcome as i32,
            request_id: entry.request_id,
            details: entry.details.into_iter().collect(),
            at: None,
        };
        self.auth.append_audit(&caller, AppendAuditRequest { entry: Some(entry) }).await?;
        Ok(())
    }
}
