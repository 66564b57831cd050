//! `ZoneService` over gRPC: each call's caller (verified from its ticket) is checked with the
//! one rule (`service.rs`), the request converted to domain calls on [`ZoneManager`], and every
//! mutating call appended to the audit log (success or failure) as its caller.

pub mod conversions;
mod packages;
mod placements;
mod service;
mod tracks;
mod zones;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ramen_proto::common::v1::AuditOutcome;
use tonic::{Request, Status};

use ramen_proto::auth::v1::{AppendAuditRequest, AuditEntry};

use crate::error::Result;
use crate::events::Caller;
use crate::manager::ZoneManager;

/// How long an audit append may take before the action's answer goes out without it.
const AUDIT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Clone)]
pub struct ZoneApi {
    manager: Arc<ZoneManager>,
}

impl ZoneApi {
    pub fn new(manager: Arc<ZoneManager>) -> Self {
        Self { manager }
    }

    /// Appends the action's outcome to the audit log, then answers. An audit failure is logged
    /// (the action already happened) rather than turned into the caller's error.
    async fn audited<T>(
        &self,
        caller: &Caller,
        action: &str,
        group: &str,
        target: String,
        result: Result<T>,
    ) -> Result<T, Status> {
        let mut details = BTreeMap::new();
        let outcome = match &result {
            Ok(_) => AuditOutcome::Success,
            Err(err) => {
                details.insert("error".to_owned(), err.to_string());
                AuditOutcome::Failure
            }
        };
        let entry = AuditEntry {
            actor: caller.actor.clone(),
            action: action.to_owned(),
            group: group.to_owned(),
            target: target.clone(),
            outcome: outcome as i32,
            request_id: caller.request_id.clone(),
            details: details.into_iter().collect(),
            ..AuditEntry::default()
        };
        let own = crate::events::own_caller();
        let append =
            self.manager.auth.append_audit(&own, AppendAuditRequest { entry: Some(entry) });
        match tokio::time::timeout(AUDIT_TIMEOUT, append).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::warn!(%err, action, %target, "audit entry not appended"),
            Err(_) => {
                tracing::warn!(action, %target, "audit entry not appended: auth did not answer in time")
            }
        }
        result.map_err(Status::from)
    }
}

/// The caller the serving layer verified (the gateway's user or a calling service);
/// `unknown` in the audit log when it names none.
pub fn caller<T>(request: &Request<T>) -> Caller {
    Caller::from_request_or(request, "unknown")
}

fn zone_target(zone: &str) -> String {
    format!("zone/{zone}")
}
