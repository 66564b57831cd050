use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, context::PublishErrorKind};
use async_nats::{Client, ConnectErrorKind, ConnectOptions, Event, HeaderMap, ServerError};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::{Credentials, inbox_prefix};
use crate::error::{BusError, Result};
use crate::headers;
use crate::subject::{Schema, Subject};

/// Options of one publish. `msg_id` is JetStream's dedupe key (`Nats-Msg-Id`): a second
/// publish with the same id inside the stream's duplicate window is acknowledged with
/// `duplicate: true` and not stored again.
#[derive(Clone, Debug, Default)]
pub struct PublishOptions {
    pub msg_id: Option<String>,
    pub headers: Option<HeaderMap>,
    /// W3C trace context; when `None` the source installed with
    /// [`set_traceparent_source`](crate::set_traceparent_source) is asked.
    pub traceparent: Option<String>,
}

impl PublishOptions {
    pub fn with_msg_id(id: impl Into<String>) -> Self {
        Self { msg_id: Some(id.into()), ..Self::default() }
    }
}

/// The server's acknowledgement of a JetStream publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishAck {
    pub stream: String,
    pub sequence: u64,
    /// The `Nats-Msg-Id` was seen inside the duplicate window; nothing new was stored.
    pub duplicate: bool,
}

/// A connection to NATS and its JetStream context. Cheap to clone; every clone shares one
/// connection that reconnects forever with capped exponential backoff, so a server restart is
/// an outage of the calls made during it, never of the `Bus`.
#[derive(Clone, Debug)]
pub struct Bus {
    client: Client,
    js: jetstream::Context,
    denials: Arc<Denials>,
}

/// The server's last permission refusals on this connection. NATS drops a refused publish or
/// subscription and says so only in an `-ERR` to the client; a JetStream call refused this
/// way then times out. Kept (and logged) so the cause is visible.
#[derive(Debug, Default)]
struct Denials(Mutex<VecDeque<String>>);

const DENIALS_KEPT: usize = 32;

impl Denials {
    fn record(&self, text: &str) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == DENIALS_KEPT {
            kept.pop_front();
        }
        kept.push_back(text.to_owned());
    }
}

/// Backoff between reconnect attempts: 50 ms doubling to a 2 s ceiling, so a restarted
/// local server is found again within about two seconds.
fn reconnect_delay(attempt: usize) -> Duration {
    let exp = attempt.min(6) as u32;
    Duration::from_millis(50u64 << exp).min(Duration::from_secs(2))
}

impl Bus {
    /// Connects to `url` (e.g. `nats://127.0.0.1:4222`) without credentials (or with a user
    /// and password in the URL), naming the connection `name` in the server's monitoring.
    /// Fails only on a malformed URL or when the first connection is refused; later outages
    /// are retried forever in the background.
    pub async fn connect(url: &str, name: &str) -> Result<Bus> {
        Bus::connect_as(url, name, None).await
    }

    /// [`Bus::connect`] as the NATS user of `credentials` (operator mode). The user's replies
    /// arrive under its own inbox prefix, `_INBOX_<user name>`, the only inbox its
    /// permissions let it read ([`crate::auth::Role`]); without credentials, a user named in
    /// the URL (a static server configuration) gets its prefix the same way.
    pub async fn connect_as(
        url: &str,
        name: &str,
        credentials: Option<&Credentials>,
    ) -> Result<Bus> {
        let denials = Arc::new(Denials::default());
        let seen = denials.clone();
        let mut options = ConnectOptions::new();
        let user = match credentials {
            Some(credentials) => {
                options = options.credentials(&credentials.to_text()).map_err(|err| {
                    BusError::Invalid { what: "NATS credentials", reason: err.to_string() }
                })?;
                credentials.name()
            }
            // A static server's user, from `nats://user:password@host` (async-nats does not
            // read a URL's user info itself): the same prefix rule.
            None => match url_userinfo(url) {
                Some((user, password)) => {
                    options = options.user_and_password(user.clone(), password);
                    user
                }
                None => String::new(),
            },
        };
        // Service users are `auth`, `zone-manager`, …; node users `node.<group>.<zone>`.
        if !user.is_empty()
            && user.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !user.starts_with('.')
            && !user.ends_with('.')
            && !user.contains("..")
        {
            options = options.custom_inbox_prefix(inbox_prefix(&user));
        }
        let client = options
            .name(name)
            .max_reconnects(None)
            .reconnect_delay_callback(reconnect_delay)
            .connection_timeout(Duration::from_secs(3))
            .event_callback(move |event| {
                let seen = seen.clone();
                async move { log_event(event, &seen) }
            })
            .connect(url)
            .await
            .map_err(|err| match err.kind() {
                ConnectErrorKind::AuthorizationViolation => BusError::Rejected {
                    op: "connect",
                    message: format!(
                        "{url} refused {} (authorization violation): check RAMEN_NATS_CREDS",
                        credentials.map_or_else(
                            || "a connection without credentials".to_owned(),
                            |c| format!("the credentials of user `{}`", c.name())
                        )
                    ),
                },
                _ => BusError::Unavailable { op: "connect", message: err.to_string() },
            })?;
        let js = jetstream::new(client.clone());
        Ok(Bus { client, js, denials })
    }

    /// The server's most recent permission refusals on this connection (newest last), e.g.
    /// `permissions violation for publish to "$JS.API.STREAM.DELETE.RAMEN_JOBS"`.
    pub fn permission_denials(&self) -> Vec<String> {
        self.denials.0.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// Readiness probe: a round trip to the server (PING/PONG) within `deadline`.
    pub async fn ping(&self, deadline: Duration) -> Result<()> {
        match tokio::time::timeout(deadline, self.client.flush()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(BusError::Unavailable { op: "ping", message: err.to_string() }),
            Err(_) => Err(BusError::Timeout { op: "ping" }),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    /// Publishes `value` as JSON to a JetStream subject and waits for the stream's ack.
    pub async fn publish<T: Serialize>(
        &self,
        subject: &Subject<T>,
        value: &T,
        options: PublishOptions,
    ) -> Result<PublishAck> {
        let payload = encode(subject.schema(), value)?;
        self.publish_encoded(subject, payload, options).await
    }

    /// Publishes `json`, which the caller has already encoded as a `T` (a hot path that writes
    /// its JSON by hand, such as a node's call records), with `subject`'s schema headers, and
    /// waits for the stream's ack. Not checked here: a reader refuses what does not decode.
    pub async fn publish_encoded<T>(
        &self,
        subject: &Subject<T>,
        json: bytes::Bytes,
        options: PublishOptions,
    ) -> Result<PublishAck> {
        let headers = headers::outgoing(
            subject.schema(),
            options.headers.as_ref(),
            options.traceparent.as_deref(),
            options.msg_id.as_deref(),
        );
        self.publish_raw(subject.name(), headers, json).await
    }

    /// Publishes already-encoded bytes with exactly `headers` (DLQ moves and replays).
    pub(crate) async fn publish_raw(
        &self,
        subject: &str,
        headers: HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<PublishAck> {
        let map = |err: async_nats::jetstream::context::PublishError| match err.kind() {
            PublishErrorKind::StreamNotFound => BusError::NoStream { subject: subject.to_owned() },
            PublishErrorKind::MaxPayloadExceeded => {
                BusError::Invalid { what: "payload", reason: err.to_string() }
            }
            _ => BusError::nats("publish", err),
        };
        let ack = self
            .js
            .publish_with_headers(subject.to_owned(), headers, payload)
            .await
            .map_err(map)?
            .await
            .map_err(map)?;
        Ok(PublishAck { stream: ack.stream, sequence: ack.sequence, duplicate: ack.duplicate })
    }
}

/// The user and password in a URL's user info (`nats://deployer:secret@host:4222`), if any
/// (percent-encoded characters decoded).
fn url_userinfo(url: &str) -> Option<(String, String)> {
    let first = url.split(',').next()?;
    let rest = first.split_once("://").map_or(first, |(_, rest)| rest);
    let authority = rest.split('/').next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    Some((percent_decode(user), percent_decode(password)))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn encode<T: Serialize>(schema: Schema, value: &T) -> Result<bytes::Bytes> {
    serde_json::to_vec(value)
        .map(bytes::Bytes::from)
        .map_err(|source| BusError::Encode { schema: schema.name, source })
}

/// Decodes a JSON payload after checking that the message's schema name is the expected one
/// (a message without the header is accepted: producers outside ramen may not set it).
pub(crate) fn decode<T: DeserializeOwned>(
    subject: &str,
    expected: Schema,
    headers: Option<&HeaderMap>,
    payload: &[u8],
) -> Result<T> {
    if let Some(name) = headers.and_then(headers::schema_name_of)
        && name != expected.name
    {
        return Err(BusError::SchemaMismatch {
            subject: subject.to_owned(),
            expected: expected.name.to_owned(),
            found: Some(name.to_owned()),
        });
    }
    serde_json::from_slice(payload)
        .map_err(|err| BusError::Decode { subject: subject.to_owned(), reason: err.to_string() })
}

fn log_event(event: Event, denials: &Denials) {
    match event {
        Event::Connected => tracing::info!("nats connected"),
        Event::Disconnected => tracing::warn!("nats disconnected; reconnecting"),
        Event::ServerError(ServerError::Other(text))
            if text.to_ascii_lowercase().contains("permissions violation") =>
        {
            denials.record(&text);
            tracing::error!(
                refusal = %text,
                "NATS refused an operation this process's user is not allowed (a ramen \
                 permission-table gap, or foreign code on this connection)"
            );
        }
        other => tracing::warn!(event = %other, "nats client event"),
    }
}

#[cfg(test)]
mod tests {
    use super::url_userinfo;

    #[test]
    fn the_user_of_a_url() {
        let pair = |u: &str, p: &str| Some((u.to_owned(), p.to_owned()));
        assert_eq!(url_userinfo("nats://deployer:s3cret@n:4222"), pair("deployer", "s3cret"));
        let cluster = "nats://auth:a%40b@n:4222,nats://auth:a%40b@m:4222";
        assert_eq!(url_userinfo(cluster), pair("auth", "a@b"));
        assert_eq!(url_userinfo("nats://n:4222"), None);
        assert_eq!(url_userinfo("n:4222"), None);
    }
}
