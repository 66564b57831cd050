//! The rebalancer's bus side: the event stream it publishes `RebalanceApplied` on (the zone's
//! status), and the scheduler settings changes it tells its other replicas about.

use ramen_bus::{Bus, PublishOptions};
use ramen_proto::common::v1::Provider as PbProvider;
use ramen_proto::events::v1 as ev;

use crate::actions::{ActionRecord, ActionState};
use crate::model::{Provider, now_ms};

pub fn provider_to_proto(provider: Provider) -> PbProvider {
    match provider {
        Provider::Local => PbProvider::Local,
        Provider::Gcp => PbProvider::Gcp,
        Provider::Aws => PbProvider::Aws,
    }
}

#[derive(Clone)]
pub struct Events {
    bus: Bus,
}

impl Events {
    pub fn new(bus: Bus) -> Self {
        Self { bus }
    }

    /// Tells every replica the scheduler settings changed (the id is the event's, so a
    /// republish is dropped).
    pub async fn scheduler_settings(&self, event: &ev::SchedulerSettingsChanged) {
        let id = event.meta.as_ref().map(|m| m.event_id.clone()).unwrap_or_default();
        let subject = ramen_service::subject::<ev::SchedulerSettingsChanged>();
        if let Err(err) = self.bus.publish(&subject, event, PublishOptions::with_msg_id(id)).await {
            tracing::warn!(error = %err, "scheduler settings change not published; replicas pick it up at their next refresh");
        }
    }

    /// Says an action reached its final state. The event id is derived from the action, so a
    /// second publish of the same outcome (two replicas racing) is dropped by dedupe.
    pub async fn rebalance_applied(&self, id: &str, record: &ActionRecord) {
        let event_id = format!("rebalance-{id}-{:?}", record.state).to_lowercase();
        let event = ev::RebalanceApplied {
            meta: Some(ev::EventMeta {
                event_id: event_id.clone(),
                at_unix_ms: now_ms(),
                actor: record.actor.clone(),
                request_id: record.request_id.clone(),
            }),
            action_id: id.to_owned(),
            group: record.group.clone(),
            zone: record.zone.clone(),
            provider: provider_to_proto(record.provider) as i32,
            applied: record.state == ActionState::Applied,
            note: record.note.clone(),
            weights: record
                .targets
                .iter()
                .map(|t| ev::TargetWeight { target: t.target.clone(), weight_permille: t.weight })
                .collect(),
            attempts: record.attempts,
        };
        let subject = ramen_service::subject::<ev::RebalanceApplied>();
        if let Err(err) =
            self.bus.publish(&subject, &event, PublishOptions::with_msg_id(event_id)).await
        {
            tracing::warn!(%err, action = id, "publishing RebalanceApplied failed");
        }
    }
}
