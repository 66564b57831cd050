//! [`AuditPort`] over auth's `AppendAudit`.

use std::time::Duration;

use async_trait::async_trait;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::auth::v1::{AppendAuditRequest, AuditEntry};
use ramen_proto::common::v1::AuditOutcome;
use tonic::transport::Channel;

use super::{AuditPort, AuditRecord, PortError, lazy_channel, request};
use crate::model::Caller;

pub struct GrpcAudit {
    client: AuthServiceClient<Channel>,
}

impl GrpcAudit {
    pub fn new(endpoint: &str) -> Result<Self, PortError> {
        Ok(Self { client: AuthServiceClient::new(lazy_channel(endpoint, Duration::from_secs(5))?) })
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
        let message = AppendAuditRequest { entry: Some(entry) };
        self.client
            .clone()
            .append_audit(request(&caller, message))
            .await
            .map_err(|s| PortError::from_status("auth", s))?;
        Ok(())
    }
}
