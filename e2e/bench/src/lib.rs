//! Shared pieces of the load generators: latency recording and the summary they print; the
//! command line and accept loop of the proxies measured in front of a node.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

/// Headers a head parsed by the floors may have; bench traffic has about ten.
pub const MAX_HEADERS: usize = 32;

/// `edge-static`'s and the floors' command line (the cost gate and cpu-bench start each the
/// same way).
#[derive(clap::Parser)]
pub struct ProxyArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    /// `host:port` of a worker's MCP endpoint; repeat for several.
    #[arg(long = "worker", required = true)]
    pub workers: Vec<String>,
    /// `@name` of the first worker's abstract Unix socket (its `mcp_local`), for an edge that
    /// reaches it there as the local zone's edge does; the floors ignore it.
    #[arg(long)]
    pub local: Option<String>,
}

/// The floors' accept loop: binds `--listen`, prints `listening on ADDR` (what the cost gate
/// and cpu-bench wait for) and, in a task of its own for each client connection, opens one
/// connection to the worker (the first `--worker`), both without Nagle's delay, and serves
/// the pair with `relay(client, worker)`. A connection's error is printed under `name` and
/// ends only that connection.
pub async fn serve_floor<F, Fut>(name: &'static str, relay: F) -> anyhow::Result<()>
where
    F: Fn(TcpStream, TcpStream) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let args = <ProxyArgs as clap::Parser>::parse();
    let worker: Arc<str> = args.workers[0].as_str().into();
    serve_each(name, args.listen, move |client| {
        let worker = worker.clone();
        async move {
            let upstream = TcpStream::connect(&*worker).await?;
            upstream.set_nodelay(true)?;
            relay(client, upstream).await
        }
    })
    .await
}

/// Binds `listen`, prints `listening on ADDR` (what the cost gate and cpu-bench wait for) and
/// serves each client connection, without Nagle's delay, with `serve` in a task of its own. A
/// connection's error is printed under `name` and ends only that connection.
pub async fn serve_each<F, Fut>(
    name: &'static str,
    listen: SocketAddr,
    serve: F,
) -> anyhow::Result<()>
where
    F: Fn(TcpStream) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let listener = TcpListener::bind(listen).await?;
    #[allow(clippy::print_stdout)]
    {
        println!("listening on {}", listener.local_addr()?);
    }
    loop {
        let (client, _) = listener.accept().await?;
        let serve = serve.clone();
        tokio::spawn(async move {
            let connection = async move {
                client.set_nodelay(true)?;
                serve(client).await
            };
            if let Err(err) = connection.await {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("{name}: {err:#}");
                }
            }
        });
    }
}

/// A head's `Content-Length`, `None` when it has none.
pub fn content_length(headers: &[httparse::Header<'_>]) -> anyhow::Result<Option<usize>> {
    let Some(header) = headers.iter().find(|h| h.name.eq_ignore_ascii_case("content-length"))
    else {
        return Ok(None);
    };
    Ok(Some(std::str::from_utf8(header.value)?.trim().parse()?))
}

/// Whether a head has a `Transfer-Encoding` header (the floors forward chunked answers at
/// most, never chunked requests).
pub fn has_transfer_encoding(headers: &[httparse::Header<'_>]) -> bool {
    headers.iter().any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
}

/// Reads from `stream` until `buf` holds at least `len` bytes.
pub async fn fill(stream: &mut TcpStream, buf: &mut BytesMut, len: usize) -> anyhow::Result<()> {
    while buf.len() < len {
        read_more(stream, buf).await?;
    }
    Ok(())
}

/// One read from `stream` into `buf`; an error when the peer closed in the middle of a message.
pub async fn read_more(stream: &mut TcpStream, buf: &mut BytesMut) -> anyhow::Result<()> {
    if stream.read_buf(buf).await? == 0 {
        anyhow::bail!("connection closed inside a message");
    }
    Ok(())
}

/// Latencies of one run, in microseconds.
#[derive(Default)]
pub struct Recorder {
    samples: Vec<u32>,
    pub errors: u64,
}

impl Recorder {
    pub fn record(&mut self, latency: Duration) {
        self.samples.push(latency.as_micros().min(u32::MAX as u128) as u32);
    }

    pub fn merge(&mut self, other: Recorder) {
        self.samples.extend(other.samples);
        self.errors += other.errors;
    }

    /// `{"calls", "calls_per_sec", "p50_us", "p99_us", "errors"}` for `elapsed`.
    pub fn summary(mut self, elapsed: Duration) -> serde_json::Value {
        self.samples.sort_unstable();
        let pick = |q: f64| {
            if self.samples.is_empty() {
                0
            } else {
                self.samples[((self.samples.len() - 1) as f64 * q).round() as usize]
            }
        };
        serde_json::json!({
            "calls": self.samples.len(),
            "calls_per_sec": (self.samples.len() as f64 / elapsed.as_secs_f64()).round(),
            "p50_us": pick(0.50),
            "p99_us": pick(0.99),
            "errors": self.errors,
        })
    }
}
