//! `mcp-load`: N concurrent MCP clients over streamable HTTP, each on its own keep-alive
//! connection — a 2025-11-25 session (initialize, initialized, then `tools/call` in a loop)
//! or, with `--stateless`, 2026-07-28 requests (no handshake: every `tools/call` carries the
//! `_meta` envelope and the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers).
//! Every answer is checked; a warm-up, then a measured window. Prints one JSON summary line.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::{self, SendRequest};
use ramen_bench::Recorder;

#[derive(Parser, Clone)]
struct Args {
    #[arg(long)]
    url: String,
    #[arg(long)]
    key: Option<String>,
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    #[arg(long, default_value = "10")]
    seconds: f64,
    #[arg(long, default_value = "2")]
    warmup: f64,
    #[arg(long, default_value = "add")]
    tool: String,
    #[arg(long, default_value = r#"{"a":20,"b":22}"#)]
    arguments: String,
    /// Substring every answer must contain (checks the call really succeeded).
    #[arg(long, default_value = "42")]
    expect: String,
    /// `ping` instead of `tools/call`: the HTTP + JSON-RPC path alone, without Python.
    #[arg(long)]
    ping: bool,
    /// MCP 2026-07-28 stateless requests instead of a 2025-11-25 session.
    #[arg(long)]
    stateless: bool,
    /// Sessions to open (initialize, initialized) and leave idle before the measured run.
    #[arg(long, default_value_t = 0)]
    idle_sessions: usize,
    /// The server's pid: its resident memory is read before and after the idle sessions open.
    #[arg(long)]
    pid: Option<u32>,
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("VmRSS value")?.parse()?)
}

/// Opens `count` sessions over 8 connections and leaves them idle (no connection kept).
async fn open_idle(args: &Args, count: usize) -> anyhow::Result<usize> {
    let per = count.div_ceil(8);
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let args = Args { stateless: false, ..args.clone() };
            let n = per.min(count.saturating_sub(task * per));
            tokio::spawn(async move {
                if n == 0 {
                    return anyhow::Ok(0);
                }
                let mut session = Session::connect(&args).await?;
                let mut opened = 1;
                while opened < n {
                    session.initialize().await?;
                    opened += 1;
                }
                anyhow::Ok(opened)
            })
        })
        .collect();
    let mut opened = 0;
    for task in tasks {
        opened += task.await??;
    }
    Ok(opened)
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-load","version":"1"}}"#;

struct Session {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    key: Option<String>,
    session: Option<String>,
    /// 2026-07-28: the target named in `Mcp-Name`.
    stateless_name: Option<String>,
}

impl Session {
    async fn connect(args: &Args) -> anyhow::Result<Self> {
        let uri: hyper::Uri = args.url.parse()?;
        let authority = uri.authority().context("url needs host:port")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let path = uri.path_and_query().map_or("/".into(), |p| p.to_string());
        let mut session = Self {
            sender,
            authority,
            path,
            key: args.key.clone(),
            session: None,
            stateless_name: None,
        };
        if args.stateless {
            session.stateless_name = Some(args.tool.clone());
            return Ok(session);
        }
        session.initialize().await?;
        Ok(session)
    }

    /// Opens a new session on this connection (initialize, initialized) and makes it current.
    async fn initialize(&mut self) -> anyhow::Result<()> {
        self.session = None;
        let (init, headers) = self
            .post(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-load","version":"1"}}}"#.into())
            .await?;
        if !init.contains("protocolVersion") {
            bail!("initialize failed: {init}");
        }
        self.session =
            headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        self.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()).await?;
        Ok(())
    }

    async fn post(&mut self, body: String) -> anyhow::Result<(String, hyper::HeaderMap)> {
        let mut request = Request::post(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(key) = &self.key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        if let Some(name) = &self.stateless_name {
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", name);
        }
        self.sender.ready().await?;
        let response =
            self.sender.send_request(request.body(Full::new(Bytes::from(body)))?).await?;
        let headers = response.headers().clone();
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            bail!("HTTP {status}: {text}");
        }
        Ok((text, headers))
    }
}

async fn worker(
    args: Args,
    start: Instant,
    warm_until: Instant,
    end: Instant,
) -> anyhow::Result<Recorder> {
    let mut session = Session::connect(&args).await?;
    let mut recorder = Recorder::default();
    let mut id = 1u64;
    let _ = start;
    loop {
        let now = Instant::now();
        if now >= end {
            return Ok(recorder);
        }
        id += 1;
        let body = if args.ping {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
        } else if args.stateless {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{},{META}}}}}"#,
                args.tool, args.arguments
            )
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{}}}}}"#,
                args.tool, args.arguments
            )
        };
        let expect = if args.ping { "\"result\":{}" } else { args.expect.as_str() };
        let sent = Instant::now();
        let outcome = session.post(body).await;
        let latency = sent.elapsed();
        if sent < warm_until {
            continue;
        }
        match outcome {
            Ok((text, _)) if text.contains(expect) && !text.contains("\"error\"") => {
                recorder.record(latency)
            }
            _ => recorder.errors += 1,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rss_before = args.pid.map(rss_kib).transpose()?;
    let opened =
        if args.idle_sessions > 0 { open_idle(&args, args.idle_sessions).await? } else { 0 };
    let rss_after = args.pid.map(rss_kib).transpose()?;
    let start = Instant::now();
    let warm_until = start + Duration::from_secs_f64(args.warmup);
    let end = warm_until + Duration::from_secs_f64(args.seconds);
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|_| tokio::spawn(worker(args.clone(), start, warm_until, end)))
        .collect();
    let mut total = Recorder::default();
    for task in tasks {
        total.merge(task.await??);
    }
    let mut summary = total.summary(Duration::from_secs_f64(args.seconds));
    summary["concurrency"] = args.concurrency.into();
    summary["idle_sessions"] = opened.into();
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        summary["rss_before_kib"] = before.into();
        summary["rss_after_kib"] = after.into();
        summary["rss_end_kib"] = args.pid.map(rss_kib).transpose()?.into();
    }
    #[allow(clippy::print_stdout)]
    {
        println!("{summary}");
    }
    Ok(())
}
