use std::time::Duration;

use tempfile::TempDir;

use crate::process::{ServerProcess, find_binary, free_port, tcp_open};

/// `redis-server` with persistence off, in a temp dir.
pub struct Redis {
    pub port: u16,
    server: ServerProcess,
    _dir: TempDir,
}

impl Redis {
    pub async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let port = free_port();
        let args = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            String::new(),
            "--appendonly".into(),
            "no".into(),
            "--dir".into(),
            dir.path().display().to_string(),
        ];
        let server = ServerProcess::spawn("redis-server", find_binary("redis-server")?, args, dir.path())?;
        let mut redis = Self { port, server, _dir: dir };
        redis.wait_ready().await?;
        Ok(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let port = self.port;
        self.server.wait_ready(Duration::from_secs(10), || tcp_open(port)).await
    }

    pub async fn kill(&mut self) {
        self.server.kill().await;
    }

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
}
