//! `ZoneService` over gRPC: requests are converted to domain calls on [`ZoneManager`], and every
//! mutating call is appended to the audit log (success or failure) with the caller named by
//! `x-ramen-actor`. Role checks happen at the gateway (zones and sizes: super admin; counts,
//! IP rules, packages: group admin); this service trusts its control-plane callers.

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

use crate::auth::AuditRecord;
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
        let entry = AuditRecord {
            actor: caller.actor.clone(),
            action: action.to_owned(),
            group: group.to_owned(),
            target: target.clone(),
            outcome,
            request_id: caller.request_id.clone(),
            details,
        };
        match tokio::time::timeout(AUDIT_TIMEOUT, self.manager.auth.append_audit(entry)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(%err, action, %target, "audit entry not appended"),
            Err(_) => {
                tracing::warn!(action, %target, "audit entry not appended: auth did not answer in time")
            }
        }
        result.map_err(Status::from)
    }
}

/// The caller named in the request metadata (set by the gateway or a calling service);
/// `unknown` in the audit log when it names none.
pub fn caller<T>(request: &Request<T>) -> Caller {
    Caller::from_metadata_or(request.metadata(), "unknown")
}

fn zone_target(zone: &str) -> String {
    format!("zone/{zone}")
}
