//! Typed bus messages: each message of `ramen.events.v1` knows its subject, so a publisher
//! cannot put an event on the wrong one. The subject list at the top of `events.proto` is
//! checked against this table by a test.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::events::v1 as ev;

/// A message published on the bus (JSON via serde; see `events.proto` for the rules).
pub trait Event: prost::Message + Default + Serialize + DeserializeOwned {
    /// The NATS subject it is published on.
    const SUBJECT: &'static str;

    /// The full protobuf name, used as the schema name in the `Ramen-Schema` header.
    const NAME: &'static str;

    fn meta(&self) -> Option<&ev::EventMeta>;
}

/// Filter for every domain event (stream `RAMEN_EVENTS`).
pub const EVENTS_FILTER: &str = "ramen.events.v1.>";

macro_rules! events {
    ($($ty:ident => $subject:literal,)*) => {
        $(
            impl Event for ev::$ty {
                const SUBJECT: &'static str = $subject;
                const NAME: &'static str = concat!("ramen.events.v1.", stringify!($ty));

                fn meta(&self) -> Option<&ev::EventMeta> {
                    self.meta.as_ref()
                }
            }
        )*

        /// (message name, subject) of every bus message, in `events.proto` order.
        pub const ALL: &[(&str, &str)] = &[$((stringify!($ty), $subject),)*];
    };
}

events! {
    DeployRequested => "ramen.events.v1.deploy.requested",
    DeployStepChanged => "ramen.events.v1.deploy.step_changed",
    DeployLog => "ramen.events.v1.deploy.log",
    DeployFinished => "ramen.events.v1.deploy.finished",
    JobCancelled => "ramen.events.v1.job.cancelled",
    GroupDeleted => "ramen.events.v1.group.deleted",
    EnvironmentDeleted => "ramen.events.v1.environment.deleted",
    ZoneDeleted => "ramen.events.v1.zone.deleted",
    PlacementChanged => "ramen.events.v1.placement.changed",
    WorkerChanged => "ramen.events.v1.worker.changed",
    RebalanceApplied => "ramen.events.v1.rebalance.applied",
    AuditAppended => "ramen.events.v1.audit.appended",
    McpKeyChanged => "ramen.events.v1.mcp_key.changed",
    ServiceAccountRulesChanged => "ramen.events.v1.service_account.changed",
    SettingsChanged => "ramen.events.v1.settings.changed",
    SchedulerSettingsChanged => "ramen.events.v1.scheduler_settings.changed",
    NodeLoadReport => "ramen.load.v1.node",
    DeployWork => "ramen.jobs.v1.deploy",
}

/// Where a dead-lettered [`ev::DeployWork`] is parked (stream `RAMEN_JOBS_DLQ`).
pub const DEPLOY_DLQ_SUBJECT: &str = "ramen.dlq.v1.deploy";

#[cfg(test)]
mod tests;
