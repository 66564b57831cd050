use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::stream::{Config, DiscardPolicy, RetentionPolicy, StorageType};

use crate::client::Bus;
use crate::error::{BusError, Result};

/// Stream metadata key naming a work stream's dead-letter stream, so consumers and the
/// advisory mover find it from the stream alone.
pub(crate) const DLQ_METADATA: &str = "ramen-dlq";

/// A work-queue stream (each message is removed once one consumer acks it) with `Nats-Msg-Id`
/// dedupe, plus its dead-letter stream and the stream capturing its max-deliveries advisories.
#[derive(Clone, Debug)]
pub struct WorkStreamSpec {
    pub name: String,
    pub subjects: Vec<String>,
    pub max_age: Duration,
    /// Largest accepted message in bytes (`0` = the server's limit).
    pub max_payload: i32,
    pub duplicate_window: Duration,
    pub dlq_name: String,
    pub dlq_max_age: Duration,
    /// 1 locally; 3 on a clustered cloud NATS.
    pub replicas: usize,
}

impl Default for WorkStreamSpec {
    fn default() -> Self {
        Self {
            name: String::new(),
            subjects: Vec::new(),
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_payload: 1024 * 1024,
            duplicate_window: Duration::from_secs(120),
            dlq_name: String::new(),
            dlq_max_age: Duration::from_secs(30 * 24 * 3600),
            replicas: 1,
        }
    }
}

/// A limits-retention stream for domain events: every consumer sees every event until
/// `max_age`.
#[derive(Clone, Debug)]
pub struct EventStreamSpec {
    pub name: String,
    pub subjects: Vec<String>,
    pub max_age: Duration,
    pub max_payload: i32,
    pub duplicate_window: Duration,
    pub replicas: usize,
}

impl Default for EventStreamSpec {
    fn default() -> Self {
        Self {
            name: String::new(),
            subjects: Vec::new(),
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_payload: 1024 * 1024,
            duplicate_window: Duration::from_secs(120),
            replicas: 1,
        }
    }
}

/// Subjects of a dead-letter stream: `ramen.dlq.<dlq name>.<original subject>`.
pub(crate) fn dlq_subject(dlq_name: &str, original_subject: &str) -> String {
    format!("ramen.dlq.{dlq_name}.{original_subject}")
}

/// The stream that keeps a work stream's max-deliveries advisories until they are handled,
/// so an advisory raised while no mover runs is not lost.
pub(crate) fn advisory_stream(dlq_name: &str) -> String {
    format!("{dlq_name}_ADVISORIES")
}

pub(crate) fn advisory_subject(work_stream: &str) -> String {
    format!("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{work_stream}.*")
}

fn base(name: &str, subjects: Vec<String>, max_age: Duration, replicas: usize) -> Config {
    Config {
        name: name.to_owned(),
        subjects,
        max_age,
        storage: StorageType::File,
        num_replicas: replicas.max(1),
        discard: DiscardPolicy::Old,
        ..Config::default()
    }
}

impl Bus {
    /// Creates the work stream, its DLQ and advisory streams, or updates them to `spec`.
    pub async fn ensure_work_stream(&self, spec: &WorkStreamSpec) -> Result<()> {
        if spec.dlq_name.is_empty() || spec.subjects.is_empty() {
            let reason = format!("work stream `{}` needs subjects and a dlq_name", spec.name);
            return Err(BusError::Invalid { what: "stream spec", reason });
        }
        let dlq = Config {
            duplicate_window: spec.duplicate_window,
            ..base(
                &spec.dlq_name,
                vec![dlq_subject(&spec.dlq_name, ">")],
                spec.dlq_max_age,
                spec.replicas,
            )
        };
        self.put_stream(dlq).await?;
        let advisories = Config {
            retention: RetentionPolicy::WorkQueue,
            ..base(
                &advisory_stream(&spec.dlq_name),
                vec![advisory_subject(&spec.name)],
                spec.dlq_max_age,
                spec.replicas,
            )
        };
        self.put_stream(advisories).await?;
        let work = Config {
            retention: RetentionPolicy::WorkQueue,
            duplicate_window: spec.duplicate_window,
            max_message_size: spec.max_payload,
            metadata: HashMap::from([(DLQ_METADATA.to_owned(), spec.dlq_name.clone())]),
            ..base(&spec.name, spec.subjects.clone(), spec.max_age, spec.replicas)
        };
        self.put_stream(work).await
    }

    /// Creates the event stream or updates it to `spec`.
    pub async fn ensure_event_stream(&self, spec: &EventStreamSpec) -> Result<()> {
        let config = Config {
            duplicate_window: spec.duplicate_window,
            max_message_size: spec.max_payload,
            ..base(&spec.name, spec.subjects.clone(), spec.max_age, spec.replicas)
        };
        self.put_stream(config).await
    }

    async fn put_stream(&self, config: Config) -> Result<()> {
        let name = config.name.clone();
        self.jetstream().create_or_update_stream(config).await.map_err(|err| {
            let message = format!("stream `{name}`: {err}");
            BusError::from_text("create or update stream", message)
        })?;
        tracing::debug!(stream = %name, "stream ensured");
        Ok(())
    }

    /// The dead-letter stream recorded on a work stream, if it has one.
    pub(crate) async fn dlq_of(&self, stream: &str) -> Result<Option<String>> {
        let stream = self.jetstream().get_stream(stream).await.map_err(|err| {
            BusError::from_text("get stream", format!("stream `{stream}`: {err}"))
        })?;
        Ok(stream.cached_info().config.metadata.get(DLQ_METADATA).cloned())
    }
}
