use std::marker::PhantomData;
use std::time::Duration;

use async_nats::jetstream::consumer::pull::{self, MessagesErrorKind};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer};
use futures::StreamExt;
use serde::de::DeserializeOwned;

use crate::client::{Bus, decode};
use crate::delivery::{Delivery, Envelope};
use crate::error::{BusError, Result};
use crate::subject::{Schema, Subject};

/// A durable pull consumer. Replicas of a service share one `durable` name, so each message
/// goes to one of them; `max_deliver` bounds the attempts before the message is dead-lettered.
#[derive(Clone, Debug)]
pub struct ConsumerSpec {
    pub stream: String,
    pub durable: String,
    /// Empty = the subject given to [`Bus::work_consumer`].
    pub filter_subject: String,
    /// How long a delivery may go without ack or `in_progress` before it is redelivered.
    pub ack_wait: Duration,
    pub max_deliver: i64,
    pub max_ack_pending: i64,
}

impl Default for ConsumerSpec {
    fn default() -> Self {
        Self {
            stream: String::new(),
            durable: String::new(),
            filter_subject: String::new(),
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            max_ack_pending: 1000,
        }
    }
}

/// Typed deliveries from a durable pull consumer. Survives server restarts and consumer loss:
/// the pull is re-issued, and the consumer re-created from its spec, with backoff.
pub struct WorkConsumer<T> {
    bus: Bus,
    spec: ConsumerSpec,
    schema: Schema,
    dlq: Option<String>,
    messages: Option<pull::Stream>,
    _payload: PhantomData<fn() -> T>,
}

impl Bus {
    /// Creates (or updates to `spec`) the durable consumer and returns its typed reader.
    pub async fn work_consumer<T: DeserializeOwned>(
        &self,
        mut spec: ConsumerSpec,
        subject: &Subject<T>,
    ) -> Result<WorkConsumer<T>> {
        if spec.filter_subject.is_empty() {
            spec.filter_subject = subject.name().to_owned();
        }
        let dlq = self.dlq_of(&spec.stream).await?;
        let mut consumer = WorkConsumer {
            bus: self.clone(),
            spec,
            schema: subject.schema(),
            dlq,
            messages: None,
            _payload: PhantomData,
        };
        consumer.messages = Some(consumer.open().await?);
        Ok(consumer)
    }
}

impl<T: DeserializeOwned> WorkConsumer<T> {
    pub fn spec(&self) -> &ConsumerSpec {
        &self.spec
    }

    /// Waits for the next delivery. A message that does not decode as `T` (or carries another
    /// schema) can never succeed, so it is dead-lettered here and the wait goes on.
    pub async fn next(&mut self) -> Result<Delivery<T>> {
        loop {
            let envelope = self.next_envelope().await?;
            let decoded = decode(
                &envelope.subject,
                self.schema,
                Some(&envelope.headers),
                &envelope.message.payload,
            );
            match decoded {
                Ok(payload) => return Ok(Delivery { payload, envelope }),
                Err(err) => {
                    tracing::error!(subject = %envelope.subject, error = %err, "poison message");
                    if let Err(dlq_err) = envelope.dead_letter(&err.to_string()).await {
                        tracing::warn!(error = %dlq_err, "parking a poison message failed");
                    }
                }
            }
        }
    }

    /// The deliveries as a `Stream`, for `while let Some(d) = stream.next().await` loops.
    pub fn into_stream(self) -> impl futures::Stream<Item = Result<Delivery<T>>> + Send
    where
        T: Send,
    {
        futures::stream::unfold(self, |mut consumer| async move {
            let item = consumer.next().await;
            Some((item, consumer))
        })
    }

    async fn next_envelope(&mut self) -> Result<Envelope> {
        let mut failures = 0u32;
        loop {
            let Some(messages) = self.messages.as_mut() else {
                match self.open().await {
                    Ok(stream) => self.messages = Some(stream),
                    Err(err) if err.is_retryable() => {
                        tracing::warn!(consumer = %self.spec.durable, error = %err, "reopening consumer");
                        tokio::time::sleep(backoff(failures)).await;
                        failures += 1;
                    }
                    Err(err) => return Err(err),
                }
                continue;
            };
            match messages.next().await {
                Some(Ok(message)) => {
                    return Envelope::new(self.bus.clone(), message, &self.spec, self.dlq.clone());
                }
                // The stream re-arms itself; after a reconnect it re-issues the pull.
                Some(Err(err)) if err.kind() == MessagesErrorKind::MissingHeartbeat => {
                    tracing::debug!(consumer = %self.spec.durable, "missed heartbeat");
                }
                Some(Err(err)) => {
                    tracing::warn!(consumer = %self.spec.durable, error = %err, "pull failed");
                    self.messages = None;
                    tokio::time::sleep(backoff(failures)).await;
                    failures += 1;
                }
                None => self.messages = None,
            }
        }
    }

    /// Upserts the consumer and starts pulling. One message per pull: a work item's ack-wait
    /// clock starts when the server sends it, so prefetching a batch would let items expire
    /// while they sit in this process's buffer.
    async fn open(&self) -> Result<pull::Stream> {
        let consumer = self.upsert().await?;
        consumer
            .stream()
            .max_messages_per_batch(1)
            .expires(Duration::from_secs(10))
            .heartbeat(Duration::from_secs(3))
            .messages()
            .await
            .map_err(|err| BusError::nats("pull", err))
    }

    async fn upsert(&self) -> Result<PullConsumer> {
        let spec = &self.spec;
        let stream = self.bus.jetstream().get_stream(&spec.stream).await.map_err(|err| {
            BusError::from_text("get stream", format!("stream `{}`: {err}", spec.stream))
        })?;
        let config = pull::Config {
            durable_name: Some(spec.durable.clone()),
            filter_subject: spec.filter_subject.clone(),
            ack_policy: AckPolicy::Explicit,
            deliver_policy: DeliverPolicy::All,
            ack_wait: spec.ack_wait,
            max_deliver: spec.max_deliver,
            max_ack_pending: spec.max_ack_pending,
            ..pull::Config::default()
        };
        stream.create_consumer(config).await.map_err(|err| {
            BusError::from_text("create consumer", format!("`{}`: {err}", spec.durable))
        })
    }
}

fn backoff(failures: u32) -> Duration {
    Duration::from_millis(100u64 << failures.min(5)).min(Duration::from_secs(3))
}

/// What a durable consumer has not settled yet, as the server counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Messages matching the consumer that were not delivered yet.
    pub pending: u64,
    /// Delivered and not yet acknowledged (in work, or waiting for redelivery).
    pub ack_pending: u64,
}

impl Bus {
    /// The backlog of durable consumer `durable` on `stream` (one consumer-info request), for
    /// queue-depth gauges and autoscalers.
    pub async fn consumer_backlog(&self, stream: &str, durable: &str) -> Result<Backlog> {
        let handle = self.jetstream().get_stream(stream).await.map_err(|err| {
            BusError::from_text("get stream", format!("stream `{stream}`: {err}"))
        })?;
        let mut consumer: PullConsumer = handle.get_consumer(durable).await.map_err(|err| {
            BusError::from_text("get consumer", format!("`{durable}` on `{stream}`: {err}"))
        })?;
        let info = consumer.info().await.map_err(|err| {
            BusError::from_text("consumer info", format!("`{durable}` on `{stream}`: {err}"))
        })?;
        Ok(Backlog { pending: info.num_pending, ack_pending: info.num_ack_pending as u64 })
    }
}
