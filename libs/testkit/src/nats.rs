use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;

use crate::ports::{PortLease, lease_port};
use crate::process::{ServerProcess, find_binary, http_status, retry_on_taken_port};

/// `nats-server -js` with its JetStream store in a temp dir: open to anyone
/// ([`Nats::start`]), or with a configuration file of the caller's, e.g. operator mode
/// ([`Nats::start_with_config`]; `ramen_bus::auth` writes one).
pub struct Nats {
    pub port: u16,
    pub monitor_port: u16,
    server: ServerProcess,
    /// Held for the server's life, restarts included: the port stays its own.
    _leases: [PortLease; 2],
    _dir: TempDir,
}

impl Nats {
    pub async fn start() -> anyhow::Result<Self> {
        retry_on_taken_port(|| Self::start_once(None)).await
    }

    /// Starts the server with `config` as its configuration file (the command line still sets
    /// the port, JetStream and its store, and wins over the file).
    pub async fn start_with_config(config: &str) -> anyhow::Result<Self> {
        retry_on_taken_port(|| Self::start_once(Some(config))).await
    }

    async fn start_once(config: Option<&str>) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let leases = [lease_port(), lease_port()];
        let (port, monitor_port) = (leases[0].port(), leases[1].port());
        let store = dir.path().join("js");
        let mut args: Vec<String> = Vec::new();
        if let Some(config) = config {
            let path = dir.path().join("nats.conf");
            std::fs::write(&path, config)?;
            args.extend(["-c".into(), path.display().to_string()]);
        }
        args.extend([
            "-js".into(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-m".into(),
            monitor_port.to_string(),
            "-sd".into(),
            store.display().to_string(),
        ]);
        let server =
            ServerProcess::spawn("nats-server", find_binary("nats-server")?, args, dir.path())?;
        let mut nats = Self { port, monitor_port, server, _leases: leases, _dir: dir };
        nats.wait_ready().await?;
        Ok(nats)
    }

    /// The `nats-server` binary tests use (for tests that start their own, e.g. a supervisor).
    pub fn binary() -> anyhow::Result<PathBuf> {
        find_binary("nats-server")
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let monitor = self.monitor_port;
        self.server
            .wait_ready(Duration::from_secs(15), || async move {
                http_status(monitor, "/healthz?js-enabled-only=true").await == Some(200)
            })
            .await
    }

    pub async fn kill(&mut self) {
        self.server.kill().await;
    }

    /// Starts the server again on the same port with the same JetStream store.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.server.restart()?;
        self.wait_ready().await
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing answers.
    pub fn pause(&self) -> anyhow::Result<()> {
        self.server.pause()
    }

    pub fn resume(&self) -> anyhow::Result<()> {
        self.server.resume()
    }

    pub fn process(&self) -> &ServerProcess {
        &self.server
    }
}
