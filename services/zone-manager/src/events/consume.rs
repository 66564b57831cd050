//! Events from other services the zone-manager acts on, each through its own durable consumer
//! (replicas share it). Handlers are idempotent: a redelivered event changes nothing twice.
//! - `ZoneDeleted`: make sure nothing of the zone is left, once the zone's own record agrees
//!   (a forged or stale event changes nothing and is logged).
//! - `McpKeyChanged`: re-push the key hashes of the affected placements (auth owns the keys,
//!   the zone-manager distributes them).
//!
//! Deleting a group or an environment is not among them: the deployer's saga calls
//! `Teardown` itself (and retries it until done), the one trigger of a placement's teardown.
//! `GroupDeleted` / `EnvironmentDeleted` stay on the bus for whoever else reads them.
//!
//! The bus is not a trusted channel (group code may reach it): a handler that destroys reads
//! the record the event speaks of first. `McpKeyChanged` and `ServiceAccountRulesChanged` need
//! no such check: they only name a group, and what is pushed is what auth answers now.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use ramen_bus::{Bus, BusError, ConsumerSpec, WorkConsumer};
use ramen_proto::event::Event;
use ramen_proto::events::v1 as ev;
use ramen_service::subject;
use ramen_store::Query;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::manager::ZoneManager;
use crate::store::group_zone;

/// Redelivery delay after a retryable failure (auth or the store briefly unavailable).
const RETRY_DELAY: Duration = Duration::from_secs(5);

pub async fn spawn_consumers(
    manager: &Arc<ZoneManager>,
    bus: &Bus,
    stream: &str,
) -> Result<(), BusError> {
    let m = manager.clone();
    consumer::<ev::ZoneDeleted, _>(manager, bus, stream, "zone-deleted", move |e| {
        let m = m.clone();
        Box::pin(async move { m.on_zone_deleted(e).await })
    })
    .await?;
    let m = manager.clone();
    consumer::<ev::McpKeyChanged, _>(manager, bus, stream, "mcp-key-changed", move |e| {
        let m = m.clone();
        Box::pin(async move {
            m.refresh_key_hashes(&e.group, &e.zones, &e.environments).await.map(|_| ())
        })
    })
    .await?;
    let m = manager.clone();
    consumer::<ev::ServiceAccountRulesChanged, _>(
        manager,
        bus,
        stream,
        "service-account-changed",
        move |e| {
            let m = m.clone();
            Box::pin(async move { m.refresh_identities(&e.group).await.map(|_| ()) })
        },
    )
    .await
}

/// A durable consumer `zone-manager-<name>` and its named task `zone-events:<name>`.
async fn consumer<T, F>(
    manager: &ZoneManager,
    bus: &Bus,
    stream: &str,
    name: &str,
    handle: F,
) -> Result<(), BusError>
where
    T: Event + DeserializeOwned + Clone + Send + 'static,
    F: Fn(T) -> BoxFuture<'static, Result<()>> + Send + Sync + 'static,
{
    let spec = ConsumerSpec {
        stream: stream.to_owned(),
        durable: format!("zone-manager-{name}"),
        ack_wait: Duration::from_secs(60),
        max_deliver: 10,
        ..ConsumerSpec::default()
    };
    let consumer = bus.work_consumer(spec, &subject::<T>()).await?;
    manager
        .tasks
        .spawn(format!("zone-events:{name}"), move |token| consume(consumer, handle, token));
    Ok(())
}

async fn consume<T, F>(mut consumer: WorkConsumer<T>, handle: F, token: CancellationToken)
where
    T: Event + DeserializeOwned + Clone + Send + 'static,
    F: Fn(T) -> BoxFuture<'static, Result<()>> + Send + Sync + 'static,
{
    loop {
        let delivery = tokio::select! {
            _ = token.cancelled() => return,
            delivery = consumer.next() => delivery,
        };
        let delivery = match delivery {
            Ok(delivery) => delivery,
            Err(err) => {
                tracing::warn!(%err, subject = T::SUBJECT, "reading events failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let settled = match handle(delivery.payload.clone()).await {
            Ok(()) => delivery.ack().await,
            Err(err) if err.is_retryable() && !delivery.is_last_attempt() => {
                tracing::warn!(%err, subject = T::SUBJECT, "handling an event failed; it will be redelivered");
                delivery.nak(Some(RETRY_DELAY)).await
            }
            Err(err) => {
                tracing::error!(%err, subject = T::SUBJECT, "handling an event failed for good");
                delivery.term().await
            }
        };
        if let Err(err) = settled {
            tracing::warn!(%err, subject = T::SUBJECT, "settling an event failed");
        }
    }
}

impl ZoneManager {
    /// The event is a claim, and any client of the bus can make it: the zone's own record is
    /// the truth. A genuine `ZoneDeleted` is published once the record is marked deleting (and
    /// just before it goes), so it is acted on only when the record is gone, or marked deleting
    /// and made before the event. Anything else (the zone alive, or made again since) is a
    /// forged or stale event: nothing is torn down, and it is logged with what it claimed and
    /// what the record says. Placements created after the event are left alone either way.
    async fn on_zone_deleted(self: &Arc<Self>, event: ev::ZoneDeleted) -> Result<()> {
        let at = event.meta.as_ref().map_or(i64::MAX, |m| m.at_unix_ms);
        if let Some(zone) = self.db.zones.get(&event.zone).await?.map(|z| z.value)
            && (!zone.deleting || zone.created_at_ms > at)
        {
            let meta = event.meta.unwrap_or_default();
            tracing::warn!(
                zone = %event.zone,
                claimed_at_ms = at,
                claimed_actor = %meta.actor,
                event_id = %meta.event_id,
                record_deleting = zone.deleting,
                record_created_at_ms = zone.created_at_ms,
                "ZoneDeleted ignored: the zone's record says it is not being deleted (a forged or stale event)"
            );
            return Ok(());
        }
        let placements =
            self.db.placements.find(&Query::new().filter(group_zone("", &event.zone))).await?;
        for placement in placements.into_iter().map(|p| p.value).filter(|p| p.created_at_ms <= at) {
            self.start_teardown(&crate::events::own_caller(), &placement.group, &event.zone)
                .await?;
        }
        if self.db.zones.get(&event.zone).await?.is_none() {
            self.db.packages.delete_many(&group_zone("", &event.zone)).await?;
        }
        Ok(())
    }
}
