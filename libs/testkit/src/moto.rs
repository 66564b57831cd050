use std::time::Duration;

use tempfile::TempDir;

use crate::ports::{PortLease, lease_port};
use crate::process::{ServerProcess, find_binary, http_status, retry_on_taken_port};

/// `moto_server`: an AWS API stand-in serving S3, ELBv2, WAFv2, IAM and EC2 on one port.
/// Credentials are ignored; use any access key and region `us-east-1`. State lives in the
/// process's memory, so a [`restart`](Self::restart) starts empty.
pub struct Moto {
    pub port: u16,
    server: ServerProcess,
    /// Held for the server's life, restarts included: the port stays its own.
    _lease: PortLease,
    _dir: TempDir,
}

impl Moto {
    pub async fn start() -> anyhow::Result<Self> {
        retry_on_taken_port(Self::start_once).await
    }

    async fn start_once() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let lease = lease_port();
        let port = lease.port();
        let args = vec!["-H".into(), "127.0.0.1".into(), "-p".into(), port.to_string()];
        let server =
            ServerProcess::spawn("moto_server", find_binary("moto_server")?, args, dir.path())?;
        let mut moto = Self { port, server, _lease: lease, _dir: dir };
        moto.wait_ready().await?;
        Ok(moto)
    }

    /// The endpoint URL to give AWS SDK clients (`AWS_ENDPOINT_URL`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let port = self.port;
        self.server
            .wait_ready(Duration::from_secs(30), || async move {
                http_status(port, "/moto-api/").await.is_some()
            })
            .await
    }

    /// SIGKILL: connections are refused from now on.
    pub async fn kill(&mut self) {
        self.server.kill().await;
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill)), with no state.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.server.restart()?;
        self.wait_ready().await
    }

    /// Freezes the server (SIGSTOP): connections are accepted by the kernel and never answered.
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
