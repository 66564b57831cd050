use std::time::Duration;

use tempfile::TempDir;

use crate::ports::{PortLease, lease_port};
use crate::process::{ServerProcess, find_binary, retry_on_taken_port, tcp_open};

/// `redis-server` with persistence off, in a temp dir; or a Sentinel in front of one
/// ([`start_sentinel`](Self::start_sentinel)), which is the same binary in another mode.
pub struct Redis {
    pub port: u16,
    password: Option<String>,
    server: ServerProcess,
    /// Held for the server's life, restarts included: the port stays its own.
    _lease: PortLease,
    _dir: TempDir,
}

impl Redis {
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_server(None).await
    }

    /// A server that requires `AUTH password` (`requirepass`).
    pub async fn start_with_password(password: &str) -> anyhow::Result<Self> {
        Self::start_server(Some(password)).await
    }

    async fn start_server(password: Option<&str>) -> anyhow::Result<Self> {
        retry_on_taken_port(|| Self::start_server_once(password)).await
    }

    async fn start_server_once(password: Option<&str>) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let lease = lease_port();
        let port = lease.port();
        let mut args: Vec<String> = vec!["--port".into(), port.to_string()];
        args.extend(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].map(String::from));
        args.extend(["--dir".into(), dir.path().display().to_string()]);
        if let Some(password) = password {
            args.extend(["--requirepass".into(), password.to_owned()]);
        }
        Self::spawn(dir, lease, password, args).await
    }

    /// A single Sentinel monitoring `master` under `master_name` (quorum 1). When `password`
    /// is given, clients must `AUTH` to the Sentinel with it; the Sentinel itself authenticates
    /// to the master with the master's password.
    pub async fn start_sentinel(
        master: &Redis,
        master_name: &str,
        password: Option<&str>,
    ) -> anyhow::Result<Self> {
        retry_on_taken_port(|| Self::start_sentinel_once(master, master_name, password)).await
    }

    async fn start_sentinel_once(
        master: &Redis,
        master_name: &str,
        password: Option<&str>,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let lease = lease_port();
        let port = lease.port();
        let mut conf = format!(
            "port {port}\nbind 127.0.0.1\ndir \"{}\"\nsentinel monitor {master_name} 127.0.0.1 {} 1\n",
            dir.path().display(),
            master.port,
        );
        if let Some(master_password) = &master.password {
            conf.push_str(&format!("sentinel auth-pass {master_name} {master_password}\n"));
        }
        if let Some(password) = password {
            conf.push_str(&format!("requirepass {password}\n"));
        }
        // Sentinel rewrites its config file, so it lives in the temp dir.
        let conf_path = dir.path().join("sentinel.conf");
        std::fs::write(&conf_path, conf)?;
        let args = vec![conf_path.display().to_string(), "--sentinel".into()];
        Self::spawn(dir, lease, password, args).await
    }

    async fn spawn(
        dir: TempDir,
        lease: PortLease,
        password: Option<&str>,
        args: Vec<String>,
    ) -> anyhow::Result<Self> {
        let binary = find_binary("redis-server")?;
        let server = ServerProcess::spawn("redis-server", binary, args, dir.path())?;
        let port = lease.port();
        let password = password.map(str::to_owned);
        let mut redis = Self { port, password, server, _lease: lease, _dir: dir };
        redis.wait_ready().await?;
        Ok(redis)
    }

    /// `redis://[:password@]127.0.0.1:port`.
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// `127.0.0.1:port`, the form Sentinel address lists use.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
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

    pub fn process(&self) -> &ServerProcess {
        &self.server
    }
}
