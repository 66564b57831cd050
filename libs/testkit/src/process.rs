use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// Finds a server binary on `PATH`, in `$RAMEN_TEST_BIN_DIR`, or in `~/.cache/ramen/venv/bin`.
pub fn find_binary(name: &str) -> anyhow::Result<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    if let Some(dir) = std::env::var_os("RAMEN_TEST_BIN_DIR") {
        dirs.push(dir.into());
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".cache/ramen/venv/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file()).with_context(|| {
        format!("`{name}` not found on PATH, $RAMEN_TEST_BIN_DIR or ~/.cache/ramen/venv/bin; run scripts/test once to install the test servers")
    })
}

/// How many times a server is started on fresh ports when the ones it got were taken by a
/// program outside the tests (leases rule out collisions between tests).
const START_ATTEMPTS: u32 = 5;

/// True when a start failed because the port was taken, so another port is worth a try.
fn port_taken(error: &anyhow::Error) -> bool {
    let text = format!("{error:#}").to_ascii_lowercase();
    text.contains("address already in use") || text.contains("address in use")
}

/// Starts a server with `start` (which leases fresh ports each time), again while the ports it
/// got turn out to be taken by a program outside the tests.
pub(crate) async fn retry_on_taken_port<T, F, Fut>(mut start: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let mut attempt = 1;
    loop {
        match start().await {
            Err(err) if attempt < START_ATTEMPTS && port_taken(&err) => attempt += 1,
            result => return result,
        }
    }
}

/// A server child process with its command line kept, so it can be killed and started again
/// with the same arguments (same port, same data dir).
pub struct ServerProcess {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    log_path: PathBuf,
    child: Option<Child>,
}

impl ServerProcess {
    pub fn spawn(
        name: &str,
        program: PathBuf,
        args: Vec<String>,
        dir: &Path,
    ) -> anyhow::Result<Self> {
        let mut server = Self {
            name: name.to_owned(),
            program,
            args,
            log_path: dir.join(format!("{name}.log")),
            child: None,
        };
        server.start()?;
        Ok(server)
    }

    fn start(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log_path)?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// SIGKILL, and wait for the process to be gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts the same command again (after [`kill`](Self::kill)).
    pub fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            bail!("{} is still running; kill it first", self.name);
        }
        self.start()
    }

    /// SIGSTOP: the server keeps its sockets open but answers nothing (an outage that hangs).
    pub fn pause(&self) -> anyhow::Result<()> {
        self.signal(Signal::SIGSTOP)
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&self) -> anyhow::Result<()> {
        self.signal(Signal::SIGCONT)
    }

    fn signal(&self, signal: Signal) -> anyhow::Result<()> {
        let pid = self.pid().with_context(|| format!("{} is not running", self.name))?;
        kill(Pid::from_raw(pid as i32), signal)?;
        Ok(())
    }

    /// The last lines the server logged, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits until `ready` answers true, failing with the server's log when it exits or the
    /// deadline passes.
    pub async fn wait_ready<F, Fut>(
        &mut self,
        deadline: Duration,
        mut ready: F,
    ) -> anyhow::Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let started = tokio::time::Instant::now();
        loop {
            if ready().await {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "{} exited with {status} before it was ready:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if started.elapsed() > deadline.mul_f64(crate::patience()) {
                bail!("{} not ready after {deadline:?}:\n{}", self.name, self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // A paused server ignores SIGKILL until continued on some kernels' accounting; wake it.
        let _ = self.signal(Signal::SIGCONT);
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// True when something accepts TCP connections on the port.
pub(crate) async fn tcp_open(port: u16) -> bool {
    tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
}

/// GET `path` over plain HTTP/1.0 and return the status code.
pub(crate) async fn http_status(port: u16, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = vec![0u8; 64];
    let n =
        tokio::time::timeout(Duration::from_secs(2), stream.read(&mut head)).await.ok()?.ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}
