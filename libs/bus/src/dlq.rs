use async_nats::HeaderMap;
use async_nats::jetstream::stream::{RawMessageErrorKind, Stream};
use bytes::Bytes;

use crate::client::{Bus, PublishAck};
use crate::error::{BusError, Result};
use crate::headers::{self as h};
use crate::streams::dlq_subject;

/// What [`park`] needs to know about the message it copies.
pub(crate) struct ParkRequest<'a> {
    pub dlq: &'a str,
    pub stream: &'a str,
    pub subject: &'a str,
    pub sequence: u64,
    pub deliveries: i64,
    pub reason: &'a str,
    pub headers: &'a HeaderMap,
    pub payload: Bytes,
}

/// Copies a message into a dead-letter stream. Its `Nats-Msg-Id` there is derived from the
/// original stream and sequence, so the handler path and the advisory path parking the same
/// message inside the duplicate window store it once.
pub(crate) async fn park(bus: &Bus, request: ParkRequest<'_>) -> Result<PublishAck> {
    let mut headers = HeaderMap::new();
    for (name, values) in request.headers.iter() {
        // `Nats-*` headers steer the server (dedupe, expectations); they must not follow along.
        if AsRef::<str>::as_ref(name).starts_with("Nats-") {
            continue;
        }
        for value in values {
            headers.append(name.clone(), value.clone());
        }
    }
    if let Some(id) = h::get(request.headers, h::MSG_ID) {
        headers.insert(h::ORIGINAL_MSG_ID, id.as_str());
    }
    headers.insert(h::DLQ_REASON, request.reason);
    headers.insert(h::DLQ_DELIVERIES, request.deliveries.to_string().as_str());
    headers.insert(h::ORIGINAL_SUBJECT, request.subject);
    headers.insert(h::ORIGINAL_STREAM, request.stream);
    headers.insert(h::ORIGINAL_SEQUENCE, request.sequence.to_string().as_str());
    let dedupe = format!("dlq:{}:{}", request.stream, request.sequence);
    headers.insert(h::MSG_ID, dedupe.as_str());
    let subject = dlq_subject(request.dlq, request.subject);
    let ack = bus.publish_raw(&subject, headers, request.payload).await?;
    tracing::warn!(
        stream = request.stream,
        sequence = request.sequence,
        reason = request.reason,
        dlq = request.dlq,
        "message dead-lettered"
    );
    Ok(ack)
}

/// A message parked in a dead-letter stream.
#[derive(Clone, Debug)]
pub struct ParkedMessage {
    /// Sequence in the dead-letter stream: the handle for replay and discard.
    pub sequence: u64,
    pub original_subject: String,
    pub original_stream: String,
    pub original_sequence: u64,
    pub original_msg_id: Option<String>,
    pub reason: String,
    pub deliveries: i64,
    pub parked_at: time::OffsetDateTime,
    pub headers: HeaderMap,
    pub payload: Bytes,
}

/// Operator access to one dead-letter stream.
#[derive(Clone, Debug)]
pub struct Dlq {
    bus: Bus,
    name: String,
}

impl Bus {
    pub fn dlq(&self, name: &str) -> Dlq {
        Dlq { bus: self.clone(), name: name.to_owned() }
    }
}

impl Dlq {
    /// Up to `limit` parked messages, oldest first.
    pub async fn list(&self, limit: usize) -> Result<Vec<ParkedMessage>> {
        let stream = self.stream().await?;
        let filter = dlq_subject(&self.name, ">");
        let (mut out, mut next) = (Vec::new(), 1u64);
        while out.len() < limit {
            match stream.get_first_raw_message_by_subject(&filter, next).await {
                Ok(message) => {
                    next = message.sequence + 1;
                    out.push(parked(message));
                }
                Err(err) if err.kind() == RawMessageErrorKind::NoMessageFound => break,
                Err(err) => return Err(BusError::nats("list dead letters", err)),
            }
        }
        Ok(out)
    }

    pub async fn get(&self, sequence: u64) -> Result<ParkedMessage> {
        let stream = self.stream().await?;
        match stream.get_raw_message(sequence).await {
            Ok(message) => Ok(parked(message)),
            Err(err) if err.kind() == RawMessageErrorKind::NoMessageFound => {
                Err(BusError::NotFound { what: format!("message {sequence} in `{}`", self.name) })
            }
            Err(err) => Err(BusError::nats("get dead letter", err)),
        }
    }

    /// Publishes the message again to its original subject (fresh `Nats-Msg-Id`, original
    /// headers minus the DLQ ones, so it gets a full set of attempts) and removes it here.
    pub async fn replay(&self, sequence: u64) -> Result<PublishAck> {
        let message = self.get(sequence).await?;
        let mut headers = HeaderMap::new();
        for (name, values) in message.headers.iter() {
            let name_str: &str = AsRef::<str>::as_ref(name);
            if name_str.starts_with("Ramen-Dlq-")
                || name_str.starts_with("Ramen-Original-")
                || name_str.starts_with("Nats-")
            {
                continue;
            }
            for value in values {
                headers.append(name.clone(), value.clone());
            }
        }
        let fresh = format!("replay:{}", uuid::Uuid::now_v7());
        headers.insert(h::MSG_ID, fresh.as_str());
        let ack = self.bus.publish_raw(&message.original_subject, headers, message.payload).await?;
        self.discard(sequence).await?;
        Ok(ack)
    }

    /// Deletes a parked message for good.
    pub async fn discard(&self, sequence: u64) -> Result<()> {
        let stream = self.stream().await?;
        match stream.delete_message(sequence).await {
            Ok(_) => Ok(()),
            Err(err) if err.to_string().contains("no message found") => {
                Err(BusError::NotFound { what: format!("message {sequence} in `{}`", self.name) })
            }
            Err(err) => Err(BusError::nats("discard dead letter", err)),
        }
    }

    async fn stream(&self) -> Result<Stream> {
        self.bus.jetstream().get_stream(&self.name).await.map_err(|err| {
            BusError::from_text("get stream", format!("stream `{}`: {err}", self.name))
        })
    }
}

fn parked(message: async_nats::jetstream::message::StreamMessage) -> ParkedMessage {
    let get = |name| h::get(&message.headers, name);
    ParkedMessage {
        sequence: message.sequence,
        original_subject: get(h::ORIGINAL_SUBJECT).unwrap_or_default(),
        original_stream: get(h::ORIGINAL_STREAM).unwrap_or_default(),
        original_sequence: get(h::ORIGINAL_SEQUENCE).and_then(|v| v.parse().ok()).unwrap_or(0),
        original_msg_id: get(h::ORIGINAL_MSG_ID),
        reason: get(h::DLQ_REASON).unwrap_or_default(),
        deliveries: get(h::DLQ_DELIVERIES).and_then(|v| v.parse().ok()).unwrap_or(0),
        parked_at: message.time,
        headers: message.headers,
        payload: message.payload,
    }
}
