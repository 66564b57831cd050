//! Auth as the deployer uses it: the group registry, secret values (only the `deployer` actor
//! gets them), the audit log and the group purge.

use std::collections::BTreeMap;
use std::sync::Arc;

use ramen_clients::{AuthClient, SecretValue};
use ramen_proto::auth::v1 as pb;
use ramen_proto::common::v1::AuditOutcome;

use crate::caller::{Caller, deployer};
use crate::error::Result;

/// One audit entry.
#[derive(Clone, Debug)]
pub struct Audit {
    pub action: &'static str,
    pub group: String,
    pub target: String,
    pub outcome: AuditOutcome,
    pub details: BTreeMap<String, String>,
}

#[derive(Clone)]
pub struct Auth(pub Arc<dyn AuthClient>);

impl Auth {
    /// Records the group in auth, on behalf of the caller (so the registration is audited as
    /// theirs). False when it was registered already.
    pub async fn register_group(&self, caller: &Caller, group: &str) -> Result<bool> {
        let request = pb::RegisterGroupRequest { group: group.to_owned() };
        Ok(self.0.register_group(caller, request).await?.created)
    }

    pub async fn purge_group(&self, group: &str) -> Result<pb::PurgeGroupResponse> {
        let request = pb::PurgeGroupRequest { group: group.to_owned() };
        Ok(self.0.purge_group(&deployer(), request).await?)
    }

    /// Secret values for the scope (zone empty = group- and environment-wide only).
    pub async fn resolve_secrets(
        &self,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<SecretValue>> {
        Ok(self.0.secrets(&deployer(), group, environment, zone).await?)
    }

    /// Appends an audit entry; a failure is logged, not returned: the action already happened
    /// and refusing to answer would hide that from its caller.
    pub async fn audit(&self, caller: &Caller, entry: Audit) {
        let action = entry.action;
        let request = pb::AppendAuditRequest {
            entry: Some(pb::AuditEntry {
                actor: caller.audit_actor().to_owned(),
                action: action.to_owned(),
                group: entry.group,
                target: entry.target,
                outcome: entry.outcome as i32,
                request_id: caller.request_id.clone(),
                details: entry.details.into_iter().collect(),
                ..Default::default()
            }),
        };
        if let Err(err) = self.0.append_audit(&deployer(), request).await {
            tracing::warn!(%action, error = %err, "audit entry not appended");
        }
    }
}
