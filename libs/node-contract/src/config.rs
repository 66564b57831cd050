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

use crate::TicketKey;
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
    /// Also serve MCP on an abstract Unix socket of a name the node picks (written to
    /// `ports_file` as `mcp_local`), for a proxy on the same host: the local zone's edge.
    /// Each send and receive over it costs the kernel about half what one over loopback TCP
    /// does (no TCP processing of the peer's side in the sender's system call); the node's
    /// system time per call falls by a quarter to a third (docs/benchmarks.md, "Seventeenth
    /// round"). Only processes of the node's own user may connect; the provider sets it only
    /// where the group's code cannot connect to it either (Landlock's abstract-socket scope,
    /// or a kernel that confines no TCP connect either).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub listen_local: bool,
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
    /// Threads serving MCP requests (tokio's workers). One by default: a node fronts one
    /// single-threaded Python runtime that costs about twice what the node does per call,
    /// so one thread outruns it, and a second only passes connections between cores: on
    /// two cores at concurrency 16, 21–22 µs of node CPU per call and 15.9–19.4k calls/s
    /// with one thread against 25–27 µs and 13.3–14.5k with two (docs/benchmarks.md, "One
    /// thread per node").
    pub threads: usize,
    pub in_flight_cap: usize,
    pub max_body_bytes: usize,
    /// Items per page of `tools/list`, `resources/list`, … (clients follow `nextCursor`).
    pub page_size: usize,
    pub max_sessions: usize,
    /// Sessions one MCP key may hold open on this node: a single caller cannot take every
    /// session slot from the others.
    pub max_sessions_per_key: usize,
    #[serde(with = "humantime_serde")]
    pub session_idle: Duration,
    #[serde(with = "humantime_serde")]
    pub ready_timeout: Duration,
    /// JetStream/NATS server for load reports; empty = no reports (e.g. a bare test node).
    pub nats_url: String,
    /// The node's NATS user (`.creds` text): it may publish this placement's load reports
    /// and nothing else. Empty = connect without credentials (a server without auth).
    pub nats_credentials: NodeCredentials,
    #[serde(with = "humantime_serde")]
    pub load_report_interval: Duration,
    pub drain_mode: DrainMode,
    #[serde(with = "humantime_serde")]
    pub drain_timeout: Duration,
    /// After a drain, how long the node keeps its MCP listener for the clients still holding
    /// connections to it (every answer then closes its connection); it stops as soon as none
    /// is open. Closing an idle keep-alive connection just as a client sends on it loses that
    /// request, and neither side can tell whether it ran: the client must close first. The edge
    /// closes an idle connection within 2 s (its pool's idle limit, reaped each second), and a
    /// load balancer stops routing to a node that fails readiness within its check interval.
    #[serde(with = "humantime_serde")]
    pub drain_linger: Duration,
    pub blob: BlobConfig,
    /// What to load at start, so a restarted worker serves the same commit.
    pub snapshot: Option<SnapshotRef>,
    pub policy: PolicyConfig,
    /// A file holding the live policy ([`PolicyConfig`] as TOML), read at start in place of
    /// `policy` and re-read when it changes: on Kubernetes a mounted Secret the kubelet
    /// refreshes, so a worker the control plane could not reach still gets every block and key
    /// change. Pushes over the admin API stay the fast path; the newer version wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_file: Option<PathBuf>,
    /// Environment the group's code sees: its secrets for this environment × zone.
    pub env: BTreeMap<String, String>,
    /// How the group's code (the Python runtime, its stdio programs, pip) is confined.
    pub sandbox: SandboxConfig,
    /// The keys the node verifies the control plane's tickets with (`x-ramen-caller` on
    /// `RunnerService` and the admin port's `/status`): its placement's, current first, then
    /// the previous during a rotation. None: the node refuses every admin call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ticket_keys: Vec<TicketKey>,
}

/// The confinement of a node's group code (`ramen_sandbox`): it reads its snapshot,
/// environment and the system's Python and libraries, writes its scratch directory, and
/// connects over TCP only to `connect_ports`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Off only where an operator said so (`zone.sandbox = "off"`): nothing then keeps the
    /// group's code from the rest of the host.
    pub enabled: bool,
    /// From the group's `egress_allow` ([`crate::egress::connect_ports`]).
    pub connect_ports: Vec<u16>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self { enabled: true, connect_ports: crate::egress::WEB_PORTS.to_vec() }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            node_id: String::new(),
            group: String::new(),
            zone: String::new(),
            track: "worker".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8000)),
            listen_local: false,
            mcp_path: "/mcp".into(),
            admin: SocketAddr::from(([127, 0, 0, 1], 9091)),
            grpc: SocketAddr::from(([127, 0, 0, 1], 7105)),
            ports_file: None,
            workdir: PathBuf::from("."),
            python: PathBuf::from("python3"),
            site_packages: Vec::new(),
            pip_args: Vec::new(),
            namespace: true,
            threads: 1,
            in_flight_cap: 64,
            max_body_bytes: 4 * 1024 * 1024,
            page_size: 100,
            max_sessions: 10_000,
            max_sessions_per_key: 1_000,
            session_idle: Duration::from_secs(30 * 60),
            ready_timeout: Duration::from_secs(120),
            nats_url: String::new(),
            nats_credentials: NodeCredentials::default(),
            load_report_interval: Duration::from_secs(2),
            drain_mode: DrainMode::Complete,
            drain_timeout: Duration::from_secs(30),
            drain_linger: Duration::from_secs(3),
            blob: BlobConfig::default(),
            snapshot: None,
            policy: PolicyConfig { require_key: true, ..Default::default() },
            policy_file: None,
            env: BTreeMap::new(),
            sandbox: SandboxConfig::default(),
            ticket_keys: Vec::new(),
        }
    }
}

/// A node's NATS credentials: written into its config file as they are, never shown by
/// `Debug` (the seed in them is the node's identity on the bus).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeCredentials(pub String);

impl NodeCredentials {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for NodeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "NodeCredentials(<none>)"
        } else {
            "NodeCredentials(<redacted>)"
        })
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

/// The pod's name, as the node's id.
pub const NODE_ID_VAR: &str = "RAMEN_NODE_ID";
/// The address the node binds its listeners to (the pod IP).
pub const BIND_HOST_VAR: &str = "RAMEN_NODE_BIND_HOST";
/// The node's working directory (a volume of the pod).
pub const WORKDIR_VAR: &str = "RAMEN_NODE_WORKDIR";
/// The mounted policy file.
pub const POLICY_FILE_VAR: &str = "RAMEN_NODE_POLICY_FILE";

/// Reads a policy file; `None` when it does not exist (yet: a volume not mounted so far).
pub fn read_policy(path: &Path) -> Result<Option<PolicyConfig>, NodeConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(NodeConfigError::Read { path: path.display().to_string(), source });
        }
    };
    let policy: PolicyConfig = toml::from_str(&text).map_err(|e| NodeConfigError::Invalid {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    policy.validate().map_err(|reason| NodeConfigError::Invalid {
        path: path.display().to_string(),
        reason: reason.to_string(),
    })?;
    Ok(Some(policy))
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

    /// The values one config file shared by every pod of a track cannot hold, from the
    /// variables the pod spec sets: `RAMEN_NODE_ID` (the pod's name), `RAMEN_NODE_BIND_HOST`
    /// (the pod's IP, when nodes bind to it), and the pod's own paths `RAMEN_NODE_WORKDIR` and
    /// `RAMEN_NODE_POLICY_FILE` (its volumes).
    pub fn with_pod_overrides(
        mut self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        if let Some(id) = var(NODE_ID_VAR) {
            self.node_id = id;
        }
        if let Some(dir) = var(WORKDIR_VAR) {
            self.workdir = PathBuf::from(dir);
        }
        if let Some(file) = var(POLICY_FILE_VAR) {
            self.policy_file = Some(PathBuf::from(file));
        }
        if let Some(host) = var(BIND_HOST_VAR) {
            let ip: std::net::IpAddr = host
                .parse()
                .map_err(|_| format!("{BIND_HOST_VAR}={host:?} is not an IP address"))?;
            for addr in [&mut self.listen, &mut self.admin, &mut self.grpc] {
                addr.set_ip(ip);
            }
        }
        Ok(self)
    }

    /// The policy in `policy_file`, when it is set and the file exists.
    pub fn read_policy_file(&self) -> Result<Option<PolicyConfig>, NodeConfigError> {
        let Some(path) = &self.policy_file else { return Ok(None) };
        read_policy(path)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !matches!(self.track.as_str(), "worker" | "worker-canary") {
            return Err(format!("`track` must be worker or worker-canary, not {:?}", self.track));
        }
        if self.threads == 0 {
            return Err("`threads` must be at least 1".into());
        }
        if self.in_flight_cap == 0 {
            return Err("`in_flight_cap` must be at least 1".into());
        }
        if self.max_sessions_per_key == 0 {
            return Err("`max_sessions_per_key` must be at least 1".into());
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
        if self.ticket_keys.len() > 2 {
            return Err(
                "`ticket_keys` holds at most two keys (the current, then the previous)".into()
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_names_the_node_and_its_address() {
        let vars = |name: &str| match name {
            NODE_ID_VAR => Some("worker-7d9f-abcde".to_owned()),
            BIND_HOST_VAR => Some("10.4.0.17".to_owned()),
            WORKDIR_VAR => Some("/var/lib/ramen/node".to_owned()),
            POLICY_FILE_VAR => Some("/etc/ramen/policy/policy.toml".to_owned()),
            _ => None,
        };
        let config = NodeConfig::default().with_pod_overrides(vars).unwrap();
        assert_eq!(config.node_id, "worker-7d9f-abcde");
        assert_eq!(config.listen, "10.4.0.17:8000".parse().unwrap());
        assert_eq!(config.admin.ip(), config.grpc.ip());
        assert_eq!(config.workdir, Path::new("/var/lib/ramen/node"));
        assert_eq!(config.policy_file.as_deref(), Some(Path::new("/etc/ramen/policy/policy.toml")));
        let untouched = NodeConfig::default().with_pod_overrides(|_| None).unwrap();
        assert_eq!(untouched.listen, NodeConfig::default().listen);
        let bad = NodeConfig::default()
            .with_pod_overrides(|n| (n == BIND_HOST_VAR).then(|| "pod-ip".to_owned()))
            .unwrap_err();
        assert!(bad.contains("RAMEN_NODE_BIND_HOST") && bad.contains("pod-ip"), "{bad}");
    }

    #[test]
    fn a_node_serves_on_one_thread_unless_told_otherwise() {
        assert_eq!(NodeConfig::default().threads, 1);
        let four: NodeConfig = toml::from_str("threads = 4").unwrap();
        assert_eq!(four.threads, 4);
        let none = NodeConfig { threads: 0, ..Default::default() }.validate().unwrap_err();
        assert!(none.contains("`threads` must be at least 1"), "{none}");
    }

    #[test]
    fn nats_credentials_round_trip_and_never_print() {
        let creds = "-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n";
        let config =
            NodeConfig { nats_credentials: NodeCredentials(creds.into()), ..Default::default() };
        assert!(!format!("{config:?}").contains("eyJ0"), "Debug shows the credentials");
        let text = toml::to_string_pretty(&config).unwrap();
        let back: NodeConfig = toml::from_str(&text).unwrap();
        assert_eq!(back.nats_credentials.0, creds);
    }

    #[test]
    fn a_policy_file_is_read_when_present_and_refused_when_bad() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        let config = NodeConfig { policy_file: Some(path.clone()), ..Default::default() };
        assert_eq!(config.read_policy_file().unwrap(), None, "not mounted yet");
        let policy =
            PolicyConfig { version: 4, blocked: vec!["pkg.tool".into()], ..Default::default() };
        std::fs::write(&path, toml::to_string(&policy).unwrap()).unwrap();
        assert_eq!(config.read_policy_file().unwrap(), Some(policy));
        std::fs::write(&path, "ip_allow = [\"10.0.0.0/40\"]").unwrap();
        let err = config.read_policy_file().unwrap_err().to_string();
        assert!(err.contains("policy.toml") && err.contains("10.0.0.0/40"), "{err}");
    }
}
