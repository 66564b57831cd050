//! The events the zone-manager publishes: `PlacementChanged`, `WorkerChanged`, `ZoneDeleted`.
//! Placement and worker events are notifications (the store holds the truth), so a failed
//! publish is logged, not retried; `ZoneDeleted` is a saga step and its error is returned.

use ramen_bus::{Bus, BusError, PublishOptions};
use ramen_proto::event::Event;
use ramen_proto::events::v1 as ev;
use ramen_service::subject;

use crate::api::conversions::{
    placement_status, provider_to_proto, size_to_proto, track_to_proto, worker_state,
};
use crate::model::{PlacementRecord, ZoneRecord, now_ms};
use crate::provider::WorkerView;

/// Who caused a change: a user (set by the gateway) or the zone-manager itself
/// ([`own_caller`]).
pub use ramen_service::Caller;

/// The zone-manager acting on its own (sagas, status changes, live policy pushes).
pub fn own_caller() -> Caller {
    Caller::acting_as(ramen_proto::metadata::ACTOR_ZONE_MANAGER)
}

#[derive(Clone)]
pub struct Publisher {
    bus: Bus,
}

impl Publisher {
    pub fn new(bus: Bus) -> Self {
        Self { bus }
    }

    fn meta(caller: &Caller) -> ev::EventMeta {
        ev::EventMeta {
            event_id: uuid::Uuid::now_v7().to_string(),
            at_unix_ms: now_ms(),
            actor: caller.actor.clone(),
            request_id: caller.request_id.clone(),
        }
    }

    async fn publish<T: Event>(&self, event: &T) -> Result<(), BusError> {
        let id = event.meta().map(|m| m.event_id.clone()).unwrap_or_default();
        self.bus.publish(&subject::<T>(), event, PublishOptions::with_msg_id(id)).await.map(|_| ())
    }

    pub async fn placement(
        &self,
        record: &PlacementRecord,
        change: ev::PlacementChange,
        caller: &Caller,
    ) {
        let event = ev::PlacementChanged {
            meta: Some(Self::meta(caller)),
            group: record.group.clone(),
            zone: record.zone.clone(),
            change: change as i32,
            status: placement_status(record.status) as i32,
            status_message: record.status_message.clone(),
            worker_count: record.worker_count,
            size: size_to_proto(record.size) as i32,
            ip_rules: record.ip_rules.clone(),
            disabled_packages: record.disabled_packages.clone(),
            policy_version: record.policy_version,
        };
        if let Err(err) = self.publish(&event).await {
            tracing::warn!(%err, placement = %record.label(), ?change, "publishing PlacementChanged failed");
        }
    }

    pub async fn worker(&self, group: &str, zone: &str, worker: &WorkerView) {
        let event = ev::WorkerChanged {
            meta: Some(Self::meta(&own_caller())),
            worker_id: worker.id.clone(),
            group: group.to_owned(),
            zone: zone.to_owned(),
            track: track_to_proto(worker.track) as i32,
            state: worker_state(worker.state) as i32,
            reason: worker.reason.clone(),
            mcp_address: worker.mcp_address.clone(),
            loaded_commit: worker.loaded_commit.clone(),
            exit_code: worker.exit_code,
        };
        if let Err(err) = self.publish(&event).await {
            tracing::warn!(%err, worker = %worker.id, "publishing WorkerChanged failed");
        }
    }

    /// Published once the zone's record is gone; an error leaves the deletion to be retried.
    pub async fn zone_deleted(&self, zone: &ZoneRecord) -> Result<(), BusError> {
        let event = ev::ZoneDeleted {
            meta: Some(Self::meta(&own_caller())),
            zone: zone.name.clone(),
            provider: provider_to_proto(zone.provider) as i32,
        };
        self.publish(&event).await
    }
}

/// A worker that left (scaled down or torn down), as `WorkerChanged` says it.
pub fn gone(id: &str, track: crate::model::TrackKind) -> WorkerView {
    WorkerView {
        id: id.to_owned(),
        track,
        state: crate::model::WorkerPhase::Exited,
        reason: "removed".into(),
        mcp_address: String::new(),
        mcp_local: String::new(),
        admin_address: String::new(),
        grpc_address: String::new(),
        loaded_commit: String::new(),
        restarts: 0,
        started_at_ms: 0,
        pid: None,
        exit_code: None,
        last_log_lines: Vec::new(),
        limits: String::new(),
    }
}
