//! Core NATS publish/subscribe: at-most-once, nothing stored. For high-rate signals that are
//! superseded by the next one (per-node load reports), where JetStream's persistence would
//! only cost.

use std::marker::PhantomData;

use async_nats::HeaderMap;
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{Bus, PublishOptions, decode, encode};
use crate::error::{BusError, Result};
use crate::headers;
use crate::subject::{Schema, Subject};

/// One core NATS message, decoded.
#[derive(Debug)]
pub struct CoreMessage<T> {
    pub subject: String,
    pub payload: T,
    pub headers: HeaderMap,
}

impl<T> CoreMessage<T> {
    pub fn traceparent(&self) -> Option<String> {
        headers::extract_trace(&self.headers)
    }
}

/// A live core subscription. Messages that fail to decode are logged and skipped: there is
/// nowhere to park them and the next report supersedes them anyway.
pub struct Subscription<T> {
    inner: async_nats::Subscriber,
    schema: Schema,
    _payload: PhantomData<fn() -> T>,
}

impl Bus {
    /// Fire-and-forget publish (no ack, no persistence). `msg_id` is ignored.
    pub async fn publish_core<T: Serialize>(
        &self,
        subject: &Subject<T>,
        value: &T,
        options: PublishOptions,
    ) -> Result<()> {
        let payload = encode(subject.schema(), value)?;
        let headers = headers::outgoing(
            subject.schema(),
            options.headers.as_ref(),
            options.traceparent.as_deref(),
            None,
        );
        self.client()
            .publish_with_headers(subject.name().to_owned(), headers, payload)
            .await
            .map_err(|err| BusError::Unavailable { op: "publish_core", message: err.to_string() })
    }

    /// Subscribes to a subject or pattern. Re-established by the client after reconnects.
    pub async fn subscribe<T: DeserializeOwned>(
        &self,
        subject: &Subject<T>,
    ) -> Result<Subscription<T>> {
        let inner =
            self.client().subscribe(subject.name().to_owned()).await.map_err(|err| {
                BusError::Unavailable { op: "subscribe", message: err.to_string() }
            })?;
        Ok(Subscription { inner, schema: subject.schema(), _payload: PhantomData })
    }
}

impl<T: DeserializeOwned> Subscription<T> {
    /// The next decodable message; `None` once the connection is closed for good.
    pub async fn next(&mut self) -> Option<CoreMessage<T>> {
        while let Some(message) = self.inner.next().await {
            let subject = message.subject.as_str();
            match decode(subject, self.schema, message.headers.as_ref(), &message.payload) {
                Ok(payload) => {
                    let subject = subject.to_owned();
                    let headers = message.headers.unwrap_or_default();
                    return Some(CoreMessage { subject, payload, headers });
                }
                Err(err) => tracing::warn!(%subject, error = %err, "dropping undecodable message"),
            }
        }
        None
    }
}
