//! Rebalance: measure the zone's targets, compute weights ([`crate::weights`]), apply them
//! through the zone's balancer, record the action, and while the balancer reconciles retry in
//! the background until applied or the deadline passes. Every request is audited
//! (`placement.rebalance`), and so is a background outcome (`placement.rebalance.applied`,
//! `.failed`, `.expired`); every final outcome is published as `RebalanceApplied`.

mod audit;
mod plan;
mod record;
mod retry;

use std::sync::Arc;

use ramen_lifecycle::TaskCenter;

pub use record::{ActionRecord, ActionState, ActionStore, COLLECTION, TargetRecord};

use crate::catalog::CatalogHandle;
use crate::cells::LoadCells;
use crate::error::Result;
use crate::events::Events;
use crate::lb::Balancers;
use crate::model::{Caller, now_ms};
use crate::ports::AuditPort;
use crate::settings::Settings;

pub struct Rebalancer {
    pub cells: Arc<LoadCells>,
    pub catalog: Arc<CatalogHandle>,
    pub actions: ActionStore,
    balancers: Balancers,
    audit: Arc<dyn AuditPort>,
    events: Events,
    tasks: TaskCenter,
    pub settings: Settings,
    /// This replica's id (scheduler lease holder, action owner).
    pub replica: String,
}

pub struct Parts {
    pub cells: Arc<LoadCells>,
    pub catalog: Arc<CatalogHandle>,
    pub actions: ActionStore,
    pub balancers: Balancers,
    pub audit: Arc<dyn AuditPort>,
    pub events: Events,
    pub tasks: TaskCenter,
    pub settings: Settings,
    pub replica: String,
}

impl Rebalancer {
    pub fn events(&self) -> &Events {
        &self.events
    }

    pub fn new(parts: Parts) -> Self {
        let Parts { cells, catalog, actions, balancers, audit, events, tasks, settings, replica } =
            parts;
        Self { cells, catalog, actions, balancers, audit, events, tasks, settings, replica }
    }

    pub fn audit_port(&self) -> &Arc<dyn AuditPort> {
        &self.audit
    }

    /// Rebalances `group` × `zone` for `caller`. `applied: false` in the answer means the
    /// balancer is reconciling and a background task keeps retrying; a refusal of the
    /// balancer is an error (the failed action is recorded and audited all the same).
    pub async fn rebalance(
        self: &Arc<Self>,
        caller: &Caller,
        group: &str,
        zone: &str,
    ) -> Result<(String, ActionRecord)> {
        let planned = match self.plan(group, zone).await {
            Ok(planned) => planned,
            Err(err) => {
                self.audit_refusal(caller, group, zone, &err).await;
                return Err(err);
            }
        };
        let now = now_ms();
        let id = uuid::Uuid::now_v7().to_string();
        let record = ActionRecord {
            group: group.to_owned(),
            zone: zone.to_owned(),
            provider: planned.zone.provider,
            region: planned.zone.region.clone(),
            state: ActionState::Pending,
            note: String::new(),
            targets: planned.targets,
            actor: caller.actor.clone(),
            request_id: caller.request_id.clone(),
            attempts: 0,
            created_ms: now,
            updated_ms: now,
            deadline_ms: now + self.settings.retry_deadline.as_millis() as i64,
            owner: self.replica.clone(),
            ticket: None,
        };
        self.actions.insert(&id, &record).await?;
        let step = self.attempt(&record).await;
        let (record, _) = self.settle(&id, step).await?;
        self.audit_request(&id, &record).await;
        if record.is_final() {
            self.events.rebalance_applied(&id, &record).await;
        } else {
            self.spawn_retry(id.clone());
        }
        if record.state == ActionState::Failed {
            return Err(crate::error::Error::Balancer(format!("{} (action {id})", record.note)));
        }
        Ok((id, record))
    }
}
