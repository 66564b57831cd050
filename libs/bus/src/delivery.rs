use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, AckKind};

use crate::client::Bus;
use crate::consumer::ConsumerSpec;
use crate::dlq::{ParkRequest, park};
use crate::error::{BusError, Result};
use crate::headers;

/// One delivery of a work item: the decoded payload plus what is needed to settle it.
/// Settle every delivery exactly once: `ack`, `nak`, `term` or `dead_letter`.
#[derive(Debug)]
pub struct Delivery<T> {
    pub payload: T,
    pub(crate) envelope: Envelope,
}

/// The untyped part of a delivery (also used to park messages that do not decode).
#[derive(Debug)]
pub(crate) struct Envelope {
    pub(crate) bus: Bus,
    pub(crate) message: jetstream::Message,
    pub(crate) subject: String,
    pub(crate) headers: HeaderMap,
    pub(crate) stream: String,
    pub(crate) stream_sequence: u64,
    pub(crate) delivered: i64,
    pub(crate) max_deliver: i64,
    pub(crate) dlq: Option<String>,
}

impl Envelope {
    pub(crate) fn new(
        bus: Bus,
        message: jetstream::Message,
        spec: &ConsumerSpec,
        dlq: Option<String>,
    ) -> Result<Self> {
        let info = message.info().map_err(|err| BusError::Decode {
            subject: message.subject.to_string(),
            reason: err.to_string(),
        })?;
        let (stream, stream_sequence, delivered) =
            (info.stream.to_owned(), info.stream_sequence, info.delivered);
        Ok(Self {
            subject: message.subject.to_string(),
            headers: message.headers.clone().unwrap_or_default(),
            bus,
            message,
            stream,
            stream_sequence,
            delivered,
            max_deliver: spec.max_deliver,
            dlq,
        })
    }

    async fn settle(&self, kind: AckKind, op: &'static str) -> Result<()> {
        // Double ack: the server confirms it applied the ack, so a lost one is an error here
        // instead of a silent redelivery later.
        self.message
            .double_ack_with(kind)
            .await
            .map_err(|err| BusError::from_text(op, err.to_string()))
    }

    /// Copies the message to the dead-letter stream with why, then terminates it here.
    pub(crate) async fn dead_letter(&self, reason: &str) -> Result<()> {
        let dlq = self
            .dlq
            .as_deref()
            .ok_or_else(|| BusError::NoDeadLetterStream { stream: self.stream.clone() })?;
        let request = ParkRequest {
            dlq,
            stream: &self.stream,
            subject: &self.subject,
            sequence: self.stream_sequence,
            deliveries: self.delivered,
            reason,
            headers: &self.headers,
            payload: self.message.payload.clone(),
        };
        park(&self.bus, request).await?;
        self.settle(AckKind::Term, "term").await
    }
}

impl<T> Delivery<T> {
    /// The concrete subject the message was published on.
    pub fn subject(&self) -> &str {
        &self.envelope.subject
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.envelope.headers
    }

    /// 1 on the first delivery, growing with each redelivery.
    pub fn delivered(&self) -> i64 {
        self.envelope.delivered
    }

    pub fn stream_sequence(&self) -> u64 {
        self.envelope.stream_sequence
    }

    pub fn msg_id(&self) -> Option<String> {
        headers::get(&self.envelope.headers, headers::MSG_ID)
    }

    pub fn traceparent(&self) -> Option<String> {
        headers::extract_trace(&self.envelope.headers)
    }

    /// The schema name and version the publisher declared.
    pub fn schema(&self) -> Option<(String, u32)> {
        headers::schema_of(&self.envelope.headers)
    }

    /// True when the server will not deliver this message again: a handler failure now must
    /// go to [`dead_letter`](Self::dead_letter) instead of `nak`.
    pub fn is_last_attempt(&self) -> bool {
        self.envelope.max_deliver > 0 && self.envelope.delivered >= self.envelope.max_deliver
    }

    /// Done: removes the message from a work-queue stream. Awaits the server's confirmation.
    pub async fn ack(&self) -> Result<()> {
        self.envelope.settle(AckKind::Ack, "ack").await
    }

    /// Not now: redeliver after `delay` (at once when `None`). Counts as a delivery attempt.
    pub async fn nak(&self, delay: Option<Duration>) -> Result<()> {
        self.envelope.settle(AckKind::Nak(delay), "nak").await
    }

    /// Still working: restarts the ack-wait clock. Send it well inside `ack_wait`.
    pub async fn in_progress(&self) -> Result<()> {
        self.envelope.settle(AckKind::Progress, "in_progress").await
    }

    /// Never redeliver, without keeping a copy (see [`dead_letter`](Self::dead_letter)).
    pub async fn term(&self) -> Result<()> {
        self.envelope.settle(AckKind::Term, "term").await
    }

    /// Parks the message in the stream's dead-letter stream with `reason`, then terminates it.
    /// If parking fails the message is left unsettled (it will be redelivered, or moved by
    /// the max-deliveries advisory).
    pub async fn dead_letter(&self, reason: &str) -> Result<()> {
        self.envelope.dead_letter(reason).await
    }
}
