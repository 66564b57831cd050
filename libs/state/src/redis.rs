//! Redis / Valkey via `fred`, single URL or Sentinel. Every call is bounded by the configured
//! timeout and fails fast while disconnected, so an outage costs a caller at most that bound;
//! the client reconnects on its own when the server returns.

mod errors;
mod settings;

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use fred::prelude::{Client, ClientLike, Expiration, KeysInterface, Options, SetOptions, Value};
use fred::types::{ClusterHash, CustomCommand};

use crate::bucket::{BucketSpec, RateDecision, check_key, check_ttl};
use crate::{SharedState, StateError};
use errors::map_error;
pub use settings::{DEFAULT_TIMEOUT, RedisSettings, RedisTarget};

const TOKEN_BUCKET: &str = include_str!("redis/token_bucket.lua");
/// Slack for our own timer over fred's, so fred's (cleaner) timeout normally fires first.
const GRACE: Duration = Duration::from_millis(50);

pub struct RedisState {
    client: Client,
    /// Per-call options: the timeout, and failing at once while disconnected.
    options: Options,
    timeout: Duration,
    prefix: String,
    /// fred's connection task; it runs until `quit`, reconnecting as needed.
    connection: Option<tokio::task::JoinHandle<Result<(), fred::error::Error>>>,
}

impl RedisState {
    /// Starts the client and waits up to `connect_timeout` for a first connection. An
    /// unreachable server is not an error here (it is logged): calls fail `Unavailable` until
    /// it answers. Only a settings problem fails.
    pub async fn connect(settings: RedisSettings) -> Result<Self, StateError> {
        let client = settings.builder()?.build().map_err(|e| map_error("connect", e))?;
        let connection = client.connect();
        match tokio::time::timeout(settings.connect_timeout, client.wait_for_connect()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "redis: first connection failed; retrying"),
            Err(_) => tracing::warn!(
                timeout = ?settings.connect_timeout,
                "redis: not connected yet; calls fail as unavailable until it is"
            ),
        }
        let options =
            Options { timeout: Some(settings.timeout), fail_fast: true, ..Options::default() };
        Ok(Self {
            client,
            options,
            timeout: settings.timeout,
            prefix: settings.key_prefix,
            connection: Some(connection),
        })
    }

    /// Closes the connection and waits for fred's connection task to end.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(self.timeout, self.client.quit()).await;
        if let Some(mut connection) = self.connection.take() {
            // After QUIT the task ends by itself; a server that does not answer gets cut off.
            if tokio::time::timeout(self.timeout * 4, &mut connection).await.is_err() {
                connection.abort();
                let _ = connection.await;
            }
        }
    }

    fn bucket_key(&self, key: &str) -> String {
        format!("{}rl:{key}", self.prefix)
    }

    fn value_key(&self, key: &str) -> String {
        format!("{}kv:{key}", self.prefix)
    }

    /// Bounds `call` by the timeout (plus grace) and maps its error.
    async fn bounded<T>(
        &self,
        op: &'static str,
        call: impl Future<Output = Result<T, fred::error::Error>>,
    ) -> Result<T, StateError> {
        match tokio::time::timeout(self.timeout + GRACE, call).await {
            Ok(result) => result.map_err(|e| map_error(op, e)),
            Err(_) => Err(StateError::Unavailable {
                op,
                message: format!("no answer within {:?}", self.timeout),
            }),
        }
    }
}

impl Drop for RedisState {
    fn drop(&mut self) {
        // Without a `close`, stop the reconnect loop rather than leave it running forever.
        if let Some(connection) = &self.connection {
            connection.abort();
        }
    }
}

#[async_trait]
impl SharedState for RedisState {
    async fn take_tokens(
        &self,
        key: &str,
        spec: BucketSpec,
        cost: u32,
    ) -> Result<RateDecision, StateError> {
        check_key(key)?;
        spec.check(cost)?;
        // EVAL (not EVALSHA): the server caches the compiled script anyway, and there is no
        // NOSCRIPT to handle after a restart or failover.
        let args: Vec<Value> = vec![
            TOKEN_BUCKET.into(),
            1.into(),
            self.bucket_key(key).into(),
            spec.capacity.into(),
            spec.refill_per_sec.to_string().into(),
            cost.into(),
        ];
        let eval = CustomCommand::new_static("EVAL", ClusterHash::Offset(2), false);
        let client = self.client.with_options(&self.options);
        let reply: Vec<i64> = self.bounded("take_tokens", client.custom(eval, args)).await?;
        let [allowed, remaining, retry_ms] = reply[..] else {
            return Err(StateError::Backend {
                op: "take_tokens",
                message: format!("unexpected script reply {reply:?}"),
            });
        };
        Ok(RateDecision {
            allowed: allowed == 1,
            remaining: u32::try_from(remaining).unwrap_or(0),
            retry_after: Duration::from_millis(u64::try_from(retry_ms).unwrap_or(0)),
        })
    }

    async fn set(&self, key: &str, value: Bytes, ttl: Duration) -> Result<(), StateError> {
        check_key(key)?;
        let px = Expiration::PX(check_ttl(ttl)? as i64);
        let client = self.client.with_options(&self.options);
        let call = client.set::<(), _, _>(self.value_key(key), value, Some(px), None, false);
        self.bounded("set", call).await
    }

    async fn set_if_absent(
        &self,
        key: &str,
        value: Bytes,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        check_key(key)?;
        let px = Expiration::PX(check_ttl(ttl)? as i64);
        let client = self.client.with_options(&self.options);
        let key = self.value_key(key);
        let call = client.set::<Value, _, _>(key, value, Some(px), Some(SetOptions::NX), false);
        // `OK` when set, nil when the key was there.
        Ok(!self.bounded("set_if_absent", call).await?.is_null())
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        check_key(key)?;
        let client = self.client.with_options(&self.options);
        self.bounded("get", client.get::<Option<Bytes>, _>(self.value_key(key))).await
    }

    async fn take(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        check_key(key)?;
        let client = self.client.with_options(&self.options);
        self.bounded("take", client.getdel::<Option<Bytes>, _>(self.value_key(key))).await
    }

    async fn delete(&self, key: &str) -> Result<(), StateError> {
        check_key(key)?;
        let client = self.client.with_options(&self.options);
        self.bounded("delete", client.del::<i64, _>(self.value_key(key))).await.map(drop)
    }

    async fn ping(&self) -> Result<(), StateError> {
        let client = self.client.with_options(&self.options);
        self.bounded("ping", client.ping::<Value>(None)).await.map(drop)
    }
}
