//! The max-deliveries path to the dead-letter stream. When a delivery's last attempt ends
//! without a settle (the process died, or it never acked), the server raises
//! `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` and leaves the message in
//! the work stream, where no consumer will ever see it again. The advisory stream created by
//! [`Bus::ensure_work_stream`] keeps those advisories; [`DeadLetterMover`] reads them through
//! a shared durable consumer (one replica handles each), copies the message to the DLQ with
//! reason `max deliveries exhausted` and deletes it from the work stream.

use std::time::Duration;

use async_nats::jetstream::stream::RawMessageErrorKind;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::client::Bus;
use crate::consumer::{ConsumerSpec, WorkConsumer};
use crate::dlq::{ParkRequest, park};
use crate::error::{BusError, Result};
use crate::streams::{advisory_stream, advisory_subject};
use crate::subject::{Schema, Subject};

pub const MAX_DELIVERIES_REASON: &str = "max deliveries exhausted";

/// The fields of `io.nats.jetstream.advisory.v1.max_deliver` that the mover needs.
#[derive(Debug, Deserialize)]
struct MaxDeliveries {
    stream: String,
    consumer: String,
    stream_seq: u64,
    deliveries: i64,
}

/// Moves messages that exhausted their deliveries on one work stream to its DLQ. Run it as a
/// named background task (its [`name`](Self::name)) in every replica of the owning service.
pub struct DeadLetterMover {
    bus: Bus,
    work_stream: String,
    dlq: String,
}

impl Bus {
    pub async fn dead_letter_mover(&self, work_stream: &str) -> Result<DeadLetterMover> {
        let dlq = self
            .dlq_of(work_stream)
            .await?
            .ok_or_else(|| BusError::NoDeadLetterStream { stream: work_stream.to_owned() })?;
        Ok(DeadLetterMover { bus: self.clone(), work_stream: work_stream.to_owned(), dlq })
    }
}

impl DeadLetterMover {
    pub fn name(&self) -> String {
        format!("dlq-mover:{}", self.work_stream)
    }

    /// Runs until `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) {
        let mut consumer = tokio::select! {
            _ = cancel.cancelled() => return,
            consumer = self.consumer() => consumer,
        };
        loop {
            let delivery = tokio::select! {
                _ = cancel.cancelled() => return,
                delivery = consumer.next() => delivery,
            };
            let delivery = match delivery {
                Ok(delivery) => delivery,
                Err(err) => {
                    tracing::error!(task = %self.name(), error = %err, "reading advisories failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let settled = match self.move_one(&delivery.payload).await {
                Ok(()) => delivery.ack().await,
                Err(err) => {
                    tracing::warn!(task = %self.name(), error = %err, "moving a dead letter failed");
                    delivery.nak(Some(Duration::from_secs(1))).await
                }
            };
            if let Err(err) = settled {
                tracing::warn!(task = %self.name(), error = %err, "settling an advisory failed");
            }
        }
    }

    /// Creates the advisory consumer, retrying while the server is unreachable.
    async fn consumer(&self) -> WorkConsumer<MaxDeliveries> {
        let subject = Subject::new(
            advisory_subject(&self.work_stream),
            Schema::new("io.nats.jetstream.advisory.v1.max_deliver", 1),
        );
        let spec = ConsumerSpec {
            stream: advisory_stream(&self.dlq),
            durable: "ramen-dlq-mover".to_owned(),
            ack_wait: Duration::from_secs(30),
            max_deliver: -1,
            ..ConsumerSpec::default()
        };
        loop {
            match self.bus.work_consumer(spec.clone(), &subject).await {
                Ok(consumer) => return consumer,
                Err(err) => {
                    tracing::warn!(task = %self.name(), error = %err, "advisory consumer not ready");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    async fn move_one(&self, advisory: &MaxDeliveries) -> Result<()> {
        let js = self.bus.jetstream();
        let stream =
            js.get_stream(&advisory.stream).await.map_err(|e| BusError::nats("get stream", e))?;
        let message = match stream.get_raw_message(advisory.stream_seq).await {
            Ok(message) => message,
            // Settled meanwhile (acked late, or parked by its handler): nothing to move.
            Err(err) if err.kind() == RawMessageErrorKind::NoMessageFound => return Ok(()),
            Err(err) => return Err(BusError::nats("get message", err)),
        };
        let request = ParkRequest {
            dlq: &self.dlq,
            stream: &advisory.stream,
            subject: message.subject.as_str(),
            sequence: advisory.stream_seq,
            deliveries: advisory.deliveries,
            reason: MAX_DELIVERIES_REASON,
            headers: &message.headers,
            payload: message.payload.clone(),
        };
        park(&self.bus, request).await?;
        tracing::info!(consumer = %advisory.consumer, sequence = advisory.stream_seq, "moved to DLQ");
        match stream.delete_message(advisory.stream_seq).await {
            Ok(_) => Ok(()),
            Err(err) if err.to_string().contains("no message found") => Ok(()),
            Err(err) => Err(BusError::nats("delete message", err)),
        }
    }
}
