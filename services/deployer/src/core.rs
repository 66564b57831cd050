//! What every part of the deployer shares: its collections, the ports it drives, the bus,
//! the blob store, the repo mirrors and its settings — and the reads and the audit helper all
//! parts need. The parts themselves (`Registry`, `Jobs`, `AppSettings`) each own their job.

use ramen_blob::BlobStore;
use ramen_bus::Bus;
use ramen_proto::common::v1::AuditOutcome;
use ramen_store::{Filter, Versioned};
use std::sync::Arc;

use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::git::RepoCache;
use crate::jobs::model::JobRecord;
use crate::model::{EnvironmentRecord, GroupPhase, GroupRecord, environment_id};
use crate::ports::{Audit, Auth, Events, Nodes, Smoke, Zones};
use crate::settings::DeployerSettings;
use crate::store::Db;
use crate::validate;

pub(crate) struct Core {
    pub db: Db,
    pub auth: Auth,
    pub zones: Zones,
    pub nodes: Nodes,
    pub smoke: Arc<dyn Smoke>,
    pub events: Events,
    pub bus: Bus,
    pub blob: Arc<dyn BlobStore>,
    pub repos: RepoCache,
    pub settings: DeployerSettings,
    pub nats: ramen_config::NatsConfig,
}

impl Core {
    pub(crate) async fn group(&self, name: &str) -> Result<Versioned<GroupRecord>> {
        self.db.groups.get(name).await?.ok_or_else(|| Error::NotFound(format!("group `{name}`")))
    }

    /// An active group (not being deleted).
    pub(crate) async fn active_group(&self, name: &str) -> Result<GroupRecord> {
        let group = self.group(name).await?.value;
        if group.status == GroupPhase::Deleting {
            return Err(Error::FailedPrecondition(format!("group `{name}` is being deleted")));
        }
        Ok(group)
    }

    pub(crate) async fn environment(&self, group: &str, name: &str) -> Result<EnvironmentRecord> {
        validate::dns_label("name", name)?;
        let found = self.db.environments.get(&environment_id(group, name)).await?;
        found
            .map(|e| e.value)
            .ok_or_else(|| Error::NotFound(format!("environment `{name}` of group `{group}`")))
    }

    /// The environment's queued or running deploy, if any.
    pub(crate) async fn live_job(
        &self,
        group: &str,
        environment: &str,
    ) -> Result<Option<JobRecord>> {
        let active = environment_id(group, environment);
        Ok(self.db.jobs.find_one(Filter::new().eq("active", active)).await?.map(|j| j.value))
    }

    pub(crate) async fn audit<const N: usize>(
        &self,
        ctx: &Caller,
        action: &'static str,
        group: &str,
        target: &str,
        details: [(&str, String); N],
    ) {
        let entry = Audit {
            action,
            group: group.to_owned(),
            target: target.to_owned(),
            outcome: AuditOutcome::Success,
            details: details.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        };
        self.auth.audit(ctx, entry).await;
    }
}
