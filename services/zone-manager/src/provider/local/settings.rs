//! How the local provider runs workers, resolved once from the configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ramen_config::{Config, DrainMode};
use ramen_node_contract::BlobConfig;

use crate::model::SizeClass;
use crate::provider::node_bus::NodeBus;

/// The program and leading arguments of a worker: `ramen worker --config <file>` or
/// `ramen-runner --config <file>`.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub leading_args: Vec<String>,
}

impl WorkerCommand {
    /// `ramen-runner` takes `--config` directly; the all-in-one `ramen` has a `worker`
    /// subcommand.
    pub fn for_binary(program: PathBuf) -> Self {
        let runner = program
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ramen-runner"));
        let leading_args = if runner { Vec::new() } else { vec!["worker".to_owned()] };
        Self { program, leading_args }
    }
}

/// Whether a size's memory limit can be enforced on this machine.
#[derive(Clone, Debug)]
pub enum MemoryLimit {
    /// `prlimit --as=<bytes>` wraps the worker (each of its processes gets the address-space
    /// limit; the Python runtime inherits it).
    Prlimit(PathBuf),
    /// Recorded on the worker, not enforced, for this reason.
    Recorded(String),
}

impl MemoryLimit {
    /// `prlimit` from util-linux when enabled and found on `PATH`.
    pub fn detect(enabled: bool) -> Self {
        if !enabled {
            return Self::Recorded(
                "memory limits are turned off (zone.memory_limits = false)".into(),
            );
        }
        match find_on_path("prlimit") {
            Some(path) => Self::Prlimit(path),
            None => Self::Recorded("`prlimit` (util-linux) is not on PATH".into()),
        }
    }

    /// What a worker of `size` gets, as written on its record.
    pub fn describe(&self, size: SizeClass) -> String {
        let memory = format!("{}Mi", size.memory_bytes() >> 20);
        let cpu = format!("cpu {}m recorded (one runtime thread)", size.cpu_millis());
        match self {
            Self::Prlimit(_) => {
                format!("memory {memory} enforced per process (RLIMIT_AS via prlimit); {cpu}")
            }
            Self::Recorded(why) => format!("memory {memory} recorded, not enforced: {why}; {cpu}"),
        }
    }
}

/// The workers' admin API (`ramen-clients`), shared by the supervisors and policy pushes, and
/// the keys the workers' tickets are signed with.
#[derive(Clone)]
pub struct NodeAdmin {
    pub client: std::sync::Arc<dyn ramen_clients::NodeClient>,
    tickets: std::sync::Arc<ramen_access::TicketKeys>,
}

impl NodeAdmin {
    pub fn new(
        client: std::sync::Arc<dyn ramen_clients::NodeClient>,
        tickets: std::sync::Arc<ramen_access::TicketKeys>,
    ) -> Self {
        Self { client, tickets }
    }

    /// What a node of `group` × `zone` verifies tickets with, for its config: its placement's
    /// audience keys (current, then previous during a rotation), derived — never the control
    /// plane's own. A leaked one signs tickets for that placement's nodes and nothing else.
    pub fn node_keys(&self, group: &str, zone: &str) -> Vec<ramen_node_contract::TicketKey> {
        let audience = ramen_access::audience::runner(group, zone);
        let keys = self.tickets.audience(&audience);
        keys.keys().map(|k| ramen_node_contract::TicketKey::new(*k)).collect()
    }

    /// A ticket for the nodes of `group` × `zone`, the zone-manager calling (the local probe
    /// reads a node's `/status` with it).
    pub fn ticket(&self, group: &str, zone: &str) -> String {
        let audience = ramen_access::audience::runner(group, zone);
        let own = crate::events::own_caller();
        self.tickets.sign(&own, &audience, ramen_access::ticket::now_ms())
    }
}

impl std::fmt::Debug for NodeAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeAdmin")
    }
}

#[derive(Clone, Debug)]
pub struct LocalSettings {
    /// `<data_dir>/zones`.
    pub root: PathBuf,
    pub command: WorkerCommand,
    pub python: PathBuf,
    pub site_packages: Vec<PathBuf>,
    pub pip_args: Vec<String>,
    pub venv_without_pip: bool,
    /// Where nodes send load reports; empty = none.
    pub nats_url: String,
    /// The NATS user each placement's nodes report as.
    pub node_bus: NodeBus,
    pub blob: BlobConfig,
    pub trusted_proxies: Vec<String>,
    pub memory: MemoryLimit,
    pub drain_mode: DrainMode,
    pub drain_timeout: Duration,
    pub drain_linger: Duration,
    /// The identity workers run as (the local "service account").
    pub user: String,
    /// Readiness polling of each worker's admin port.
    pub probe_interval: Duration,
    /// Ceiling of the back-off between restarts of a worker that keeps dying.
    pub max_backoff: Duration,
    pub nodes: NodeAdmin,
    /// Confine the group's code (`zone.sandbox = "on"`).
    pub sandbox: bool,
    /// What this host's kernel can confine (tests stand in a weaker one).
    pub support: ramen_sandbox::Support,
}

impl LocalSettings {
    /// From the process configuration; `nats_url` is the bus the platform connected to.
    pub fn from_config(
        config: &Config,
        nats_url: String,
        nodes: NodeAdmin,
    ) -> std::io::Result<Self> {
        let zone = &config.zone;
        let program = if zone.worker_binary.is_empty() {
            default_worker_binary(&std::env::current_exe()?)
        } else {
            PathBuf::from(&zone.worker_binary)
        };
        let blob = if config.s3.bucket.is_empty() {
            BlobConfig { dir: Some(config.data_dir.join("blobs")), s3: None }
        } else {
            BlobConfig { dir: None, s3: Some(config.s3.clone()) }
        };
        Ok(Self {
            root: config.data_dir.join("zones"),
            command: WorkerCommand::for_binary(program),
            python: PathBuf::from(&zone.python),
            site_packages: zone.site_packages.iter().map(PathBuf::from).collect(),
            pip_args: zone.pip_args.clone(),
            venv_without_pip: zone.venv_without_pip,
            nats_url,
            node_bus: NodeBus::default(),
            blob,
            trusted_proxies: zone.trusted_proxies.clone(),
            memory: MemoryLimit::detect(zone.memory_limits),
            drain_mode: config.drain.mode,
            drain_timeout: config.drain.timeout,
            drain_linger: config.drain.linger,
            user: local_user(),
            probe_interval: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
            nodes,
            sandbox: zone.sandbox == ramen_config::SandboxMode::On,
            support: ramen_sandbox::Support::probe(),
        })
    }
}

/// The all-in-one `ramen` runs workers itself (`ramen worker`); a service binary of its own
/// (`ramen-zone-manager`) has no node in it, so it uses `ramen-runner` beside it.
fn default_worker_binary(current: &Path) -> PathBuf {
    let name = current.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if name.starts_with("ramen-zone-manager") {
        current.with_file_name("ramen-runner")
    } else {
        current.to_path_buf()
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn local_user() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_default();
    if !user.is_empty() {
        return format!("local user {user}");
    }
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map_or_else(|_| "local user".into(), |m| format!("local uid {}", m.uid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_binaries_take_the_config_directly() {
        let runner = WorkerCommand::for_binary("/x/ramen-runner".into());
        assert!(runner.leading_args.is_empty());
        assert_eq!(WorkerCommand::for_binary("/x/ramen".into()).leading_args, vec!["worker"]);
    }

    #[test]
    fn a_service_binary_runs_the_runner_beside_it() {
        let zm = default_worker_binary(Path::new("/opt/bin/ramen-zone-manager"));
        assert_eq!(zm, Path::new("/opt/bin/ramen-runner"));
        assert_eq!(default_worker_binary(Path::new("/opt/bin/ramen")), Path::new("/opt/bin/ramen"));
    }

    #[test]
    fn limits_are_described_as_applied_or_recorded() {
        let applied = MemoryLimit::Prlimit("/usr/bin/prlimit".into()).describe(SizeClass::M);
        assert!(applied.starts_with("memory 1024Mi enforced"), "{applied}");
        let recorded = MemoryLimit::detect(false).describe(SizeClass::S);
        assert!(
            recorded.contains("512Mi recorded, not enforced") && recorded.contains("turned off")
        );
    }
}
