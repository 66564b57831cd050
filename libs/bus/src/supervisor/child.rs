//! One `nats-server` child: spawn, forward its output to `tracing`, stop it politely.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::error::{BusError, Result};

/// The command line of the child, kept so a restart runs the same server on the same port
/// and store.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub binary: PathBuf,
    /// `None` on a first start without a configured port: the server picks one itself
    /// (`-p -1`) and reports it in its ports file, so no other process can take it between
    /// choosing and binding. Restarts then use the port it picked.
    pub port: Option<u16>,
    pub store_dir: PathBuf,
    /// A configuration file (operator mode); the command line's settings win over it.
    pub config_file: Option<PathBuf>,
}

/// A running child and the tasks copying its stdout/stderr; they end at EOF, i.e. when
/// the child exits, and are joined by [`Running::wait`].
pub(crate) struct Running {
    pub child: Child,
    forwarders: Vec<JoinHandle<()>>,
}

impl Launch {
    pub fn spawn(&self) -> Result<Running> {
        let port = self.port.map_or_else(|| "-1".to_owned(), |p| p.to_string());
        let mut command = Command::new(&self.binary);
        if let Some(file) = &self.config_file {
            command.arg("-c").arg(file);
        }
        let mut child = command
            .arg("-js")
            .args(["-a", "127.0.0.1", "-p", &port])
            .arg("-sd")
            .arg(&self.store_dir)
            .arg("--ports_file_dir")
            .arg(self.ports_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a terminal's Ctrl-C reaches ramen only, which then stops
            // the server after the services that use it.
            .process_group(0)
            // If ramen's runtime goes away without a shutdown, do not leave the server behind.
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| BusError::io(format!("starting {}", self.binary.display()), err))?;
        let mut forwarders = Vec::new();
        if let Some(out) = child.stdout.take() {
            forwarders.push(tokio::spawn(forward(out)));
        }
        if let Some(err) = child.stderr.take() {
            forwarders.push(tokio::spawn(forward(err)));
        }
        tracing::info!(pid = child.id(), port = ?self.port, "nats-server started");
        Ok(Running { child, forwarders })
    }

    /// Where the server writes `<binary name>_<pid>.ports` once it listens.
    pub fn ports_dir(&self) -> PathBuf {
        self.store_dir.join("ports")
    }

    /// The client port the running server `pid` reported, once its ports file is there.
    pub fn reported_port(&self, pid: u32) -> Option<u16> {
        let name = self.binary.file_name()?.to_str()?;
        let text = std::fs::read_to_string(self.ports_dir().join(format!("{name}_{pid}.ports")));
        let ports: serde_json::Value = serde_json::from_str(&text.ok()?).ok()?;
        let url = ports.get("nats")?.as_array()?.first()?.as_str()?;
        url.rsplit(':').next()?.parse().ok()
    }
}

impl Running {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let status = self.child.wait().await;
        for forwarder in self.forwarders.drain(..) {
            let _ = forwarder.await;
        }
        status
    }

    /// SIGTERM (nats-server flushes its store and exits), SIGKILL after `deadline`.
    pub async fn terminate(mut self, deadline: Duration) {
        if let Some(pid) = self.pid() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
        match tokio::time::timeout(deadline, self.wait()).await {
            Ok(status) => tracing::info!(?status, "nats-server stopped"),
            Err(_) => {
                tracing::warn!(?deadline, "nats-server ignored SIGTERM; killing it");
                let _ = self.child.kill().await;
                let _ = self.wait().await;
            }
        }
    }
}

/// Copies nats-server's log lines (`[pid] date time [LVL] text`) to `tracing` at their level.
async fn forward(pipe: impl AsyncRead + Unpin) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("[ERR]") || line.contains("[FTL]") {
            tracing::error!(target: "nats_server", "{line}");
        } else if line.contains("[WRN]") {
            tracing::warn!(target: "nats_server", "{line}");
        } else {
            // Startup banners and routine notices: useful when debugging, noise otherwise.
            tracing::debug!(target: "nats_server", "{line}");
        }
    }
}
