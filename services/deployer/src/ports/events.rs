//! Publishing domain events on `RAMEN_EVENTS` (each with its event id as `Nats-Msg-Id`).
//! Publishing is best effort after the store write it follows: the store is the source of
//! truth, and a lost event costs a watcher a poll interval, never a job.

use ramen_bus::{Bus, BusError, PublishOptions};
use ramen_proto::event::Event;
use ramen_proto::events::v1::EventMeta;

use crate::caller::Caller;
use crate::model::now_ms;

#[derive(Clone)]
pub struct Events {
    bus: Bus,
}

impl Events {
    pub fn new(bus: Bus) -> Self {
        Self { bus }
    }

    /// The stream every service publishes on ([`ramen_service::ensure_event_stream`]).
    pub async fn ensure_stream(&self, nats: &ramen_config::NatsConfig) -> Result<(), BusError> {
        ramen_service::ensure_event_stream(&self.bus, nats).await
    }

    pub async fn publish<E: Event>(&self, event: &E) {
        let id = event.meta().map(|m| m.event_id.clone()).unwrap_or_default();
        let options = PublishOptions::with_msg_id(id);
        if let Err(err) = self.bus.publish(&ramen_service::subject::<E>(), event, options).await {
            tracing::warn!(subject = E::SUBJECT, error = %err, "event not published");
        }
    }
}

pub fn meta(ctx: &Caller) -> EventMeta {
    EventMeta {
        event_id: uuid::Uuid::now_v7().to_string(),
        at_unix_ms: now_ms(),
        actor: ctx.audit_actor().to_owned(),
        request_id: ctx.request_id.clone(),
    }
}
