//! Events auth publishes on `RAMEN_EVENTS`: `McpKeyChanged` (the zone-manager re-pushes the
//! key hashes of the affected placements, so a revoked key stops working on running nodes) and
//! `AuditAppended`.

use ramen_bus::{Bus, BusError, PublishOptions};
use ramen_proto::event::Event;
use ramen_proto::events::v1::EventMeta;

use crate::model::{new_id, now_ms};
use ramen_access::Caller;

#[derive(Clone)]
pub struct Events {
    bus: Bus,
}

impl Events {
    pub fn new(bus: Bus) -> Self {
        Self { bus }
    }

    /// Creates (or updates to the shared spec) the domain-event stream every service publishes
    /// to. Idempotent; each publishing service ensures it at start-up.
    pub async fn ensure_stream(&self, nats: &ramen_config::NatsConfig) -> Result<(), BusError> {
        ramen_service::ensure_event_stream(&self.bus, nats).await
    }

    /// Publishes `event` with its event id as `Nats-Msg-Id`, so a retried publish is stored once.
    pub async fn publish<E: Event>(&self, event: &E) -> Result<(), BusError> {
        let id = event.meta().map(|m| m.event_id.clone()).unwrap_or_else(new_id);
        self.bus
            .publish(&ramen_service::subject::<E>(), event, PublishOptions::with_msg_id(id))
            .await?;
        Ok(())
    }
}

pub fn meta(caller: &Caller) -> EventMeta {
    EventMeta {
        event_id: new_id(),
        at_unix_ms: now_ms(),
        actor: caller.actor.clone(),
        request_id: caller.request_id.clone(),
    }
}
