//! The node's configuration: a TOML file the zone provider writes for each worker
//! (`ramen worker --config <file>`, `ramen-runner --config <file>`). Policy and snapshot
//! sections are also pushed live over the node's admin API; the file is what a restarted
//! worker comes back with.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ramen_config::{DrainMode, S3Config};
use serde::{Deserialize, Serialize};

use crate::policy::PolicyConfig;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    pub node_id: String,
    pub group: String,
    pub zone: String,
    /// `worker` or `worker-canary`.
    pub track: String,
    /// MCP streamable HTTP.
    pub listen: SocketAddr,
    pub mcp_path: String,
    /// `/healthz`, `/readyz`, `/metrics`, `/status`.
    pub admin: SocketAddr,
    /// `RunnerService` gRPC (reload, status, drain, policy updates).
    pub grpc: SocketAddr,
    /// Where the node writes the addresses it bound ([`crate::NodePorts`]) once it listens:
    /// a provider that gives port 0 learns the ports from there, so no port is ever chosen
    /// by one process and bound by another.
    pub ports_file: Option<PathBuf>,
    /// Working directory: virtualenv, unpacked snapshots, the runtime's sources.
    pub workdir: PathBuf,
    /// Interpreter the virtualenv is created from.
    pub python: PathBuf,
    /// Directories made visible in the virtualenv (a `.pth` file), e.g. an image's
    /// preinstalled MCP SDK, so `pip install -r requirements.txt` finds them satisfied.
    pub site_packages: Vec<PathBuf>,
    /// Extra arguments for `pip install` (an index URL, `--no-index --find-links ...`).
    pub pip_args: Vec<String>,
    pub namespace: bool,
    pub in_flight_cap: usize,
    pub max_body_bytes: usize,
    /// Items per page of `tools/list`, `resources/list`, … (clients follow `nextCursor`).
    pub page_size: usize,
    pub max_sessions: usize,
    #[serde(with = "humantime_serde")]
    pub session_idle: Duration,
    #[serde(with = "humantime_serde")]
    pub ready_timeout: Duration,
    /// JetStream/NATS server for load reports; empty = no reports (e.g. a bare test node).
    pub nats_url: String,
    #[serde(with = "humantime_serde")]
    pub load_report_interval: Duration,
    pub drain_mode: DrainMode,
    #[serde(with = "humantime_serde")]
    pub drain_timeout: Duration,
    pub blob: BlobConfig,
    /// What to load at start, so a restarted worker serves the same commit.
    pub snapshot: Option<SnapshotRef>,
    pub policy: PolicyConfig,
    /// Environment the group's code sees: its secrets for this environment × zone.
    pub env: BTreeMap<String, String>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node_id: String::new(),
            group: String::new(),
            zone: String::new(),
            track: "worker".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8000)),
            mcp_path: "/mcp".into(),
            admin: SocketAddr::from(([127, 0, 0, 1], 9091)),
            grpc: SocketAddr::from(([127, 0, 0, 1], 7105)),
            ports_file: None,
            workdir: PathBuf::from("."),
            python: PathBuf::from("python3"),
            site_packages: Vec::new(),
            pip_args: Vec::new(),
            namespace: true,
            in_flight_cap: 64,
            max_body_bytes: 4 * 1024 * 1024,
            page_size: 100,
            max_sessions: 10_000,
            session_idle: Duration::from_secs(30 * 60),
            ready_timeout: Duration::from_secs(120),
            nats_url: String::new(),
            load_report_interval: Duration::from_secs(2),
            drain_mode: DrainMode::Complete,
            drain_timeout: Duration::from_secs(30),
            blob: BlobConfig::default(),
            snapshot: None,
            policy: PolicyConfig { require_key: true, ..Default::default() },
            env: BTreeMap::new(),
        }
    }
}

/// Where snapshots are fetched from: a local directory (local zone) or S3.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlobConfig {
    pub dir: Option<PathBuf>,
    pub s3: Option<S3Config>,
}

/// A repo snapshot in the blob store: a gzipped tar of the repo at `commit`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRef {
    pub commit: String,
    pub key: String,
    /// Lowercase hex SHA-256 of the archive.
    pub digest: String,
    /// The environment built for it once per deploy; the node unpacks it and never runs pip.
    /// `None`: no requirements (or a config written before environments were built).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentRef>,
}

/// A built Python environment in the blob store (see [`crate::environment`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentRef {
    /// What it was built from (requirements, Python, platform), hashed.
    pub key: String,
    /// Blob store key of the archive.
    pub location: String,
    /// Lowercase hex SHA-256 of the archive.
    pub digest: String,
}

#[derive(Debug, thiserror::Error)]
pub enum NodeConfigError {
    #[error("cannot read node config {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("invalid node config {path}: {reason}")]
    Invalid { path: String, reason: String },
}

impl NodeConfig {
    pub fn load(path: &Path) -> Result<Self, NodeConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| NodeConfigError::Read { path: path.display().to_string(), source })?;
        let config: Self = toml::from_str(&text).map_err(|e| NodeConfigError::Invalid {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        config.validate().map_err(|reason| NodeConfigError::Invalid {
            path: path.display().to_string(),
            reason,
        })?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !matches!(self.track.as_str(), "worker" | "worker-canary") {
            return Err(format!("`track` must be worker or worker-canary, not {:?}", self.track));
        }
        if self.in_flight_cap == 0 {
            return Err("`in_flight_cap` must be at least 1".into());
        }
        if self.page_size == 0 {
            return Err("`page_size` must be at least 1".into());
        }
        if !self.mcp_path.starts_with('/') {
            return Err(format!("`mcp_path` must start with `/`, not {:?}", self.mcp_path));
        }
        if self.load_report_interval < Duration::from_millis(100) {
            return Err("`load_report_interval` must be at least 100ms".into());
        }
        self.policy.validate().map_err(|e| format!("policy: {e}"))?;
        Ok(())
    }

    /// Writes the config atomically with mode 0600 (it may carry secrets in `env`).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let text = toml::to_string_pretty(self).map_err(std::io::Error::other)?;
        let tmp = path.with_extension("toml.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(tmp, path)
    }
}
