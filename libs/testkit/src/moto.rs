use std::time::Duration;

use tempfile::TempDir;

use crate::process::{ServerProcess, find_binary, free_port, http_status};

/// `moto_server`: an AWS API stand-in serving S3, ELBv2, WAFv2, IAM and EC2 on one port.
/// Credentials are ignored; use any access key and region `us-east-1`.
pub struct Moto {
    pub port: u16,
    server: ServerProcess,
    _dir: TempDir,
}

impl Moto {
    pub async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let port = free_port();
        let args = vec!["-H".into(), "127.0.0.1".into(), "-p".into(), port.to_string()];
        let server = ServerProcess::spawn("moto_server", find_binary("moto_server")?, args, dir.path())?;
        let mut moto = Self { port, server, _dir: dir };
        moto.server
            .wait_ready(Duration::from_secs(30), || async move {
                http_status(port, "/moto-api/").await.is_some()
            })
            .await?;
        Ok(moto)
    }

    /// The endpoint URL to give AWS SDK clients (`AWS_ENDPOINT_URL`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub async fn kill(&mut self) {
        self.server.kill().await;
    }
}
