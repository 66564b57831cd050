use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Secret;

/// Where ramen runs: `local` (one machine, embedded adapters, generated keys) or `cloud`
/// (MongoDB, S3, external NATS, Redis; secrets from the environment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Local,
    Cloud,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

/// What happens to in-flight work on SIGTERM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DrainMode {
    /// Stop taking new work, let the current work finish (bounded by the drain timeout).
    #[default]
    Complete,
    /// Cancel the current work at once (checkpointed where the work supports it).
    Interrupt,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub mode: Mode,
    /// Local mode's state: store, blobs, NATS store, generated keys, zone working dirs.
    pub data_dir: PathBuf,
    pub log: LogConfig,
    pub listen: Listen,
    pub endpoints: Endpoints,
    pub nats: NatsConfig,
    pub mongo: MongoConfig,
    pub s3: S3Config,
    pub redis: RedisConfig,
    pub auth: AuthConfig,
    pub drain: DrainConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mode: Mode::Local,
            data_dir: default_data_dir(),
            log: LogConfig::default(),
            listen: Listen::default(),
            endpoints: Endpoints::default(),
            nats: NatsConfig::default(),
            mongo: MongoConfig::default(),
            s3: S3Config::default(),
            redis: RedisConfig::default(),
            auth: AuthConfig::default(),
            drain: DrainConfig::default(),
        }
    }
}

fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(dir).join("ramen");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/ramen"),
        None => PathBuf::from(".ramen"),
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// An `EnvFilter` directive; `RUST_LOG` wins when set.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: LogFormat::Pretty, level: "info".into() }
    }
}

/// The addresses each service listens on. In `ramen up` every service runs in one process,
/// so each needs its own port; in cloud mode a pod uses the one of its service.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Listen {
    /// api-gateway: REST API, console and the MCP edge (`/mcp/...`).
    pub api: SocketAddr,
    pub auth: SocketAddr,
    pub deployer: SocketAddr,
    pub zone_manager: SocketAddr,
    pub rebalancer: SocketAddr,
    /// `/healthz`, `/readyz` and `/metrics` of the process (never exposed publicly).
    pub admin: SocketAddr,
}

impl Default for Listen {
    fn default() -> Self {
        let at = |port| SocketAddr::from(([127, 0, 0, 1], port));
        Self {
            api: at(8080),
            auth: at(7101),
            deployer: at(7102),
            zone_manager: at(7103),
            rebalancer: at(7104),
            admin: at(9090),
        }
    }
}

/// Where services reach each other's gRPC APIs. Empty = derived from [`Listen`] (one host).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Endpoints {
    pub auth: String,
    pub deployer: String,
    pub zone_manager: String,
    pub rebalancer: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct NatsConfig {
    /// External JetStream server. Unset in local mode = ramen starts its own `nats-server`.
    pub url: String,
    /// `nats-server` binary for the supervised child; empty = `PATH`, then the data dir's venv.
    pub binary: String,
    pub stream: String,
    pub kv_bucket: String,
    pub dlq_stream: String,
    pub events_stream: String,
    /// Fleet-wide ceiling on delivered-but-unacked jobs on the durable consumer.
    pub max_ack_pending: i64,
    /// Deliveries before a job is parked on the dead-letter stream.
    pub max_deliver: i64,
    #[serde(with = "humantime_serde")]
    pub ack_wait: Duration,
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    #[serde(with = "humantime_serde")]
    pub dlq_max_age: Duration,
    pub max_payload: i32,
}

impl Default for NatsConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            binary: String::new(),
            stream: "RAMEN_JOBS".into(),
            kv_bucket: "ramen-job-locks".into(),
            dlq_stream: "RAMEN_JOBS_DLQ".into(),
            events_stream: "RAMEN_EVENTS".into(),
            max_ack_pending: 64,
            max_deliver: 8,
            ack_wait: Duration::from_secs(60),
            max_age: Duration::from_secs(7 * 24 * 3600),
            dlq_max_age: Duration::from_secs(30 * 24 * 3600),
            max_payload: 1024 * 1024,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct MongoConfig {
    /// Unset = the embedded store in the data directory (local mode only).
    pub uri: Secret,
    pub db: String,
}

impl Default for MongoConfig {
    fn default() -> Self {
        Self { uri: Secret::default(), db: "ramen".into() }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct S3Config {
    /// Unset bucket = a local directory in the data directory (local mode only).
    pub bucket: String,
    /// S3-compatible endpoint (MinIO, moto); empty = AWS.
    pub endpoint: String,
    pub region: String,
    /// Path-style addressing, needed by most S3-compatible servers.
    pub force_path_style: bool,
}

impl Default for S3Config {
    fn default() -> Self {
        Self {
            bucket: String::new(),
            endpoint: String::new(),
            region: "us-east-1".into(),
            force_path_style: true,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct RedisConfig {
    /// `redis://[:pass@]host:port[/db]`; unset (and no sentinels) = in-memory state.
    pub url: Secret,
    /// Comma-separated `host:port` Sentinels; wins over `url` when set.
    pub sentinel_addrs: String,
    pub master_name: String,
    pub password: Secret,
    /// Defaults to `password`.
    pub sentinel_password: Secret,
    /// Bound on every call, so an outage degrades instead of blocking.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            url: Secret::default(),
            sentinel_addrs: String::new(),
            master_name: String::new(),
            password: Secret::default(),
            sentinel_password: Secret::default(),
            timeout: Duration::from_millis(250),
        }
    }
}

impl RedisConfig {
    pub fn sentinels(&self) -> Vec<String> {
        self.sentinel_addrs
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    pub fn is_configured(&self) -> bool {
        !self.url.is_empty() || !self.sentinels().is_empty()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthConfig {
    /// HS256 key for access tokens (at least 32 bytes). Local mode generates one.
    pub jwt_secret: Secret,
    /// Previous signing key, still accepted for verification during a rotation.
    pub jwt_previous_secret: Secret,
    /// AES-256-GCM key for sealed secrets: exactly 32 bytes, base64. Local mode generates one.
    pub secrets_key: Secret,
    /// Previous sealing key (for `ramen admin reseal` after a rotation).
    pub secrets_previous_key: Secret,
    /// Creates a super admin on the first boot of an empty user collection.
    pub bootstrap_admin_email: String,
    #[serde(with = "humantime_serde")]
    pub access_ttl: Duration,
    #[serde(with = "humantime_serde")]
    pub refresh_ttl: Duration,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            jwt_secret: Secret::default(),
            jwt_previous_secret: Secret::default(),
            secrets_key: Secret::default(),
            secrets_previous_key: Secret::default(),
            bootstrap_admin_email: String::new(),
            access_ttl: Duration::from_secs(15 * 60),
            refresh_ttl: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct DrainConfig {
    pub mode: DrainMode,
    /// Ceiling on a `complete` drain; past it, remaining work is cancelled or handed back.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for DrainConfig {
    fn default() -> Self {
        Self { mode: DrainMode::Complete, timeout: Duration::from_secs(30) }
    }
}

impl Config {
    /// The gRPC endpoint of a service: the configured one, or this host's listen address.
    pub fn endpoint(&self, service: ServiceName) -> String {
        let (configured, listen) = match service {
            ServiceName::Auth => (&self.endpoints.auth, self.listen.auth),
            ServiceName::Deployer => (&self.endpoints.deployer, self.listen.deployer),
            ServiceName::ZoneManager => (&self.endpoints.zone_manager, self.listen.zone_manager),
            ServiceName::Rebalancer => (&self.endpoints.rebalancer, self.listen.rebalancer),
        };
        if configured.is_empty() {
            let host = if listen.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                listen.ip().to_string()
            };
            format!("http://{host}:{}", listen.port())
        } else {
            configured.clone()
        }
    }
}

/// Services that other services call over gRPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceName {
    Auth,
    Deployer,
    ZoneManager,
    Rebalancer,
}
