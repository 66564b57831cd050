//! The bus port: NATS JetStream through `async-nats`, against a real `nats-server` — an
//! external one (`RAMEN_NATS_URL`) in the cloud, or the child [`NatsSupervisor`] runs for
//! `ramen up`. There is no in-process stand-in.
//!
//! # Subjects and payloads
//! A [`Subject<T>`] binds a subject (or a pattern, for consumers) to the payload type and its
//! [`Schema`]. Payloads are JSON. Every message carries:
//! - `Ramen-Schema: <schema name>;v=<version>` (e.g. `ramen.events.v1.DeployFinished;v=1`);
//!   a consumer refuses a message whose schema *name* differs and exposes the version.
//! - `traceparent` (W3C), from [`PublishOptions::traceparent`] or the source the telemetry
//!   crate installs with [`set_traceparent_source`]; read back with
//!   [`Delivery::traceparent`].
//! - `Nats-Msg-Id` when [`PublishOptions::msg_id`] is set: JetStream drops a republish with
//!   the same id inside the stream's duplicate window and acks it with `duplicate: true`.
//!
//! # Streams
//! - Work streams ([`Bus::ensure_work_stream`]): work-queue retention, so a message lives
//!   until one consumer settles it. Consumed by durable pull consumers
//!   ([`Bus::work_consumer`]) that replicas share.
//! - Event streams ([`Bus::ensure_event_stream`]): limits retention (kept until `max_age`),
//!   for domain events every interested service reads with its own durable.
//! - Core subjects ([`Bus::publish_core`], [`Bus::subscribe`]): no persistence, for
//!   high-rate reports superseded by the next one.
//!
//! Dead-letter streams use subjects `ramen.dlq.<dlq name>.<original subject>`; no other
//! stream may capture `ramen.dlq.>`.
//!
//! # Settling a delivery and dead letters
//! Each [`Delivery`] is settled once: `ack` (done), `nak(delay)` (retry later),
//! `in_progress` (extend ack-wait; the heartbeat of long work), `term` (drop), or
//! `dead_letter(reason)`. A work item reaches its work stream's DLQ on two paths:
//! 1. Handler side: when a handler fails and [`Delivery::is_last_attempt`] is true, it calls
//!    [`Delivery::dead_letter`] — the message is copied to the DLQ, then terminated.
//!    Messages that do not decode are parked the same way by [`WorkConsumer::next`].
//! 2. Advisory side: if the last attempt is never settled (the process died, or the ack-wait
//!    ran out), the server raises a `MAX_DELIVERIES` advisory, which a stream created beside
//!    the DLQ (`<dlq>_ADVISORIES`) keeps; the [`DeadLetterMover`] task copies the message to
//!    the DLQ with reason `max deliveries exhausted` and deletes it from the work stream.
//!
//! A parked message keeps its payload and headers (schema, traceparent, …) and gains
//! `Ramen-Dlq-Reason`, `Ramen-Dlq-Deliveries`, `Ramen-Original-Subject`,
//! `Ramen-Original-Stream`, `Ramen-Original-Sequence` and `Ramen-Original-Msg-Id`. Its own
//! `Nats-Msg-Id` is `dlq:<stream>:<sequence>`, so both paths parking the same message store
//! it once. [`Dlq`] lists, replays (to the original subject, fresh msg id, full attempts) and
//! discards parked messages.
//!
//! # KV and leases
//! [`Kv`] offers create (fails with [`BusError::AlreadyExists`]), revision-checked update
//! and delete ([`BusError::WrongRevision`]), put, keys and watch. [`Lease`] builds exclusive
//! ownership on it; the bucket TTL bounds how long a dead holder keeps a lease, so holders
//! heartbeat at a third of the TTL or less.
//!
//! # Errors
//! One [`BusError`]; [`BusError::is_retryable`] separates outages (retry / nak with delay)
//! from mistakes and poison (term / dead-letter).

mod advisory;
pub mod auth;
mod client;
mod consumer;
mod core;
mod delivery;
mod dlq;
mod error;
pub mod headers;
mod kv;
mod lease;
mod streams;
mod subject;
mod supervisor;
#[cfg(feature = "test-util")]
pub mod testing;

pub use advisory::{DeadLetterMover, MAX_DELIVERIES_REASON};
pub use async_nats::HeaderMap;
pub use client::{Bus, PublishAck, PublishOptions};
pub use consumer::{Backlog, ConsumerSpec, WorkConsumer};
pub use core::{CoreMessage, Subscription};
pub use delivery::Delivery;
pub use dlq::{Dlq, ParkedMessage};
pub use error::{BusError, Result};
pub use headers::{extract_trace, inject_trace, set_traceparent_source};
pub use kv::{Entry, Kv, KvChange, KvSpec};
pub use lease::{Lease, LeaseError};
pub use streams::{EventStreamSpec, WorkStreamSpec};
pub use subject::{Schema, Subject, parse_schema_header};
pub use supervisor::{
    MIN_VERSION, NATS_SERVER_PACKAGE, NatsSupervisor, ServerAuth, SupervisorConfig, parse_version,
};
