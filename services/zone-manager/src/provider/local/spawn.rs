//! Starting one worker process: its node config (written 0600: it carries the group's
//! secrets), loopback ports it picks itself and reports, the memory limit of its size, a
//! scrubbed environment.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use ramen_node_contract::{NodeConfig, NodePorts};
use tokio::process::{Child, Command};

use super::layout::private_dir;
use super::settings::{LocalSettings, MemoryLimit};
use super::worker::WorkerCtx;
use super::{logs, orphans};
use crate::model::{PlacementRecord, SizeClass, now_ms};
use crate::provider::ConfigTemplate;

/// Variables a worker inherits from the control plane; everything else (the control plane's
/// own keys and URLs) stays out of the group's processes.
const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "USER",
    "LOGNAME",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "RAMEN_LOG_FORMAT",
    "RAMEN_LOG_LEVEL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];
/// `AWS_`: a worker reads its snapshot from the blob store (S3) with the same credential
/// chain as the control plane on this host (keys, profile, web identity).
const INHERITED_PREFIXES: &[&str] = &["PIP_", "OTEL_", "AWS_"];

pub(crate) struct Proc {
    pub child: Child,
    pub pid: u32,
    /// Known once the node has bound them and written its ports file.
    pub ports: Option<NodePorts>,
    /// The live-policy version written into its config.
    pub policy_version: u64,
    pub started_at_ms: i64,
}

pub(crate) async fn spawn(ctx: &WorkerCtx, template: &ConfigTemplate) -> Result<Proc, String> {
    let settings = &ctx.placement.settings;
    let record = ctx.placement.record();
    private_dir(&ctx.dir.dir).map_err(|e| e.to_string())?;
    // Port 0: the node binds what the kernel gives it and reports the ports in its ports
    // file, so no port is chosen here and taken by someone else before the node binds it.
    let _ = std::fs::remove_file(ctx.dir.ports_file());
    let config = node_config(ctx, &record, template);
    let config_path = ctx.dir.node_config();
    config
        .save(&config_path)
        .map_err(|e| format!("cannot write {}: {e}", config_path.display()))?;
    if settings.venv_without_pip {
        precreate_venv(&settings.python, &ctx.dir.node_workdir()).await?;
    }
    logs::rotate(&ctx.dir.log());
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ctx.dir.log())
        .map_err(|e| format!("cannot open {}: {e}", ctx.dir.log().display()))?;
    let stderr = log.try_clone().map_err(|e| e.to_string())?;
    let mut command = command(settings, record.size, &config_path);
    command.stdin(Stdio::null()).stdout(log).stderr(stderr).process_group(0).kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", settings.command.program.display()))?;
    let pid = child.id().ok_or("the worker exited at once")?;
    orphans::write_pid(&ctx.dir, pid);
    Ok(Proc {
        child,
        pid,
        ports: None,
        policy_version: record.policy_version,
        started_at_ms: now_ms(),
    })
}

fn node_config(ctx: &WorkerCtx, record: &PlacementRecord, template: &ConfigTemplate) -> NodeConfig {
    let settings = &ctx.placement.settings;
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let (listen, admin, grpc) = (any, any, any);
    NodeConfig {
        node_id: ctx.id.clone(),
        group: record.group.clone(),
        zone: record.zone.clone(),
        track: ctx.track.name().to_owned(),
        listen,
        listen_local: serves_locally(settings.sandbox, settings.support),
        admin,
        grpc,
        ports_file: Some(ctx.dir.ports_file()),
        workdir: ctx.dir.node_workdir(),
        python: settings.python.clone(),
        site_packages: settings.site_packages.clone(),
        pip_args: settings.pip_args.clone(),
        nats_url: settings.nats_url.clone(),
        nats_credentials: settings.node_bus.credentials(&record.group, &record.zone),
        drain_mode: settings.drain_mode,
        drain_timeout: settings.drain_timeout,
        drain_linger: settings.drain_linger,
        blob: settings.blob.clone(),
        snapshot: template.snapshot.clone(),
        policy: crate::provider::policy::policy_config(
            record,
            &settings.trusted_proxies,
            template.verbose,
        ),
        env: template.secrets.clone(),
        sandbox: template.sandbox(settings.sandbox),
        ticket_keys: settings.nodes.node_keys(&record.group, &record.zone),
        ..NodeConfig::default()
    }
}

/// Whether the node also serves MCP on an abstract Unix socket, for the edge when it runs on
/// this host: only where the group's code cannot connect to that socket either, or could
/// connect to the node's TCP port just as well. Landlock scopes abstract sockets from ABI 6;
/// below it, but from ABI 4, it confines TCP connects, so a socket would open a way to the
/// node that the port's confinement closes.
fn serves_locally(sandbox: bool, support: ramen_sandbox::Support) -> bool {
    !sandbox || support.scopes() || !support.tcp()
}

/// `[prlimit --as=<bytes> --] <worker binary> [worker] --config <file>`, with a scrubbed
/// environment sized for the worker (one runtime thread, few malloc arenas: the address-space
/// limit counts reservations, not use).
fn command(settings: &LocalSettings, size: SizeClass, config: &Path) -> Command {
    let worker = &settings.command;
    let mut command = match &settings.memory {
        MemoryLimit::Prlimit(prlimit) => {
            let mut command = Command::new(prlimit);
            command.arg(format!("--as={}", size.memory_bytes())).arg("--").arg(&worker.program);
            command
        }
        MemoryLimit::Recorded(_) => Command::new(&worker.program),
    };
    command.args(&worker.leading_args).arg("--config").arg(config);
    scrubbed(&mut command);
    // The node's own threads are its config's `threads` (one by default).
    command.env("MALLOC_ARENA_MAX", "2");
    command
}

/// Only what a worker (or the environment builder) may see of the control plane's
/// environment.
pub(super) fn scrubbed(command: &mut Command) {
    command.env_clear();
    for (key, value) in std::env::vars_os() {
        let Some(name) = key.to_str() else { continue };
        if INHERITED.contains(&name) || INHERITED_PREFIXES.iter().any(|p| name.starts_with(p)) {
            command.env(&key, value);
        }
    }
    command.env("NO_COLOR", "1");
}

/// `python -m venv --without-pip` (tens of milliseconds instead of seconds of `ensurepip`),
/// when the configured site-packages provide pip.
async fn precreate_venv(python: &Path, workdir: &Path) -> Result<(), String> {
    let venv = workdir.join("venv");
    if venv.join("bin/python").exists() {
        return Ok(());
    }
    std::fs::create_dir_all(workdir)
        .map_err(|e| format!("cannot create {}: {e}", workdir.display()))?;
    let output = Command::new(python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .await
        .map_err(|e| format!("cannot create the virtualenv with {}: {e}", python.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot create the virtualenv with {}: {}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use ramen_sandbox::Support;

    use super::serves_locally;

    #[test]
    fn a_node_serves_a_local_socket_only_where_group_code_cannot_reach_it_or_reaches_tcp_anyway() {
        // Landlock ABI 6 and up scopes abstract sockets: the group's code cannot connect.
        assert!(serves_locally(true, Support { abi: 6 }));
        assert!(serves_locally(true, Support { abi: 7 }));
        // ABI 4 and 5 confine TCP connects but not abstract sockets: a socket would be a way
        // around the port rules.
        assert!(!serves_locally(true, Support { abi: 4 }));
        assert!(!serves_locally(true, Support { abi: 5 }));
        // No TCP confinement (below ABI 4), or none at all (sandbox off): the group's code
        // reaches the node's TCP port already; the socket opens nothing more.
        assert!(serves_locally(true, Support { abi: 3 }));
        assert!(serves_locally(true, Support { abi: 0 }));
        assert!(serves_locally(false, Support { abi: 5 }));
    }
}
