//! `mcp-load`: N concurrent MCP clients over streamable HTTP, each on its own keep-alive
//! connection — a 2025-11-25 session (initialize, initialized, then `tools/call` in a loop)
//! or, with `--stateless`, 2026-07-28 requests (no handshake: every `tools/call` carries the
//! `_meta` envelope and the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers).
//! Every answer is checked; a warm-up, then a measured window. Prints one JSON summary line.
//!
//! `--mix` (the soak, issue 18) replaces the single tool by a fixed weighted rotation of
//! `tools/call`, `tools/list`, `resources/read`, `prompts/get`, a slow tool and a failing tool
//! (hello-repo's), each answer checked exactly; the failing tool's `isError` result is an
//! expected error, counted apart. `--rate` caps the total calls per second, `--report-every`
//! prints one JSON line per interval before the summary. `--get` sends plain GETs instead
//! (an ordinary REST client, for hostile-bench).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request, StatusCode};
use ramen_bench::Recorder;
use serde_json::Value;

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
    /// Mixed traffic against hello-repo (see `ROTATION`) instead of one tool; 2025-11-25
    /// sessions only (resources and prompts are read in a session).
    #[arg(long, conflicts_with_all = ["ping", "stateless", "get"])]
    mix: bool,
    /// Cap on the total calls per second over all connections (0: as fast as they answer).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Print one JSON line per interval of this many seconds before the summary (0: none).
    #[arg(long, default_value_t = 0.0)]
    report_every: f64,
    /// A call unanswered after this many seconds is an error, and its connection is replaced.
    #[arg(long, default_value = "30")]
    timeout: f64,
    /// Plain HTTP GETs of `--url` (e.g. a REST API listing) answered 200 with `--expect` in
    /// the body, instead of MCP.
    #[arg(long, conflicts_with_all = ["ping", "stateless"])]
    get: bool,
    /// An extra request header, `name: value` (repeatable; e.g. the API's `authorization`).
    #[arg(long = "header")]
    headers: Vec<String>,
}

/// What one request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// `tools/call` of `--tool` with `--arguments` (the default).
    Call,
    Ping,
    Get,
    /// `notes.add` 20 + 22.
    Add,
    /// `tools/list`.
    List,
    /// `resources/read` of `notes://index`.
    Resource,
    /// `prompts/get` of `notes.summarize`.
    Prompt,
    /// `weather.survey` of 4 steps: about 200 ms (50 ms a step), with log notifications.
    Slow,
    /// `notes.divide` by zero: a tool error (`isError`), the expected answer.
    Fail,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Call => "tools/call",
            Kind::Ping => "ping",
            Kind::Get => "GET",
            Kind::Add => "notes.add",
            Kind::List => "tools/list",
            Kind::Resource => "resources/read notes://index",
            Kind::Prompt => "prompts/get notes.summarize",
            Kind::Slow => "weather.survey",
            Kind::Fail => "notes.divide by 0",
        }
    }
}

/// The mix, one slot per call in turn (shared by all connections): 8/20 `tools/call`, 3/20
/// each list, resource and prompt, 2/20 failing calls and 1/20 slow calls. The slow tool
/// takes 200 ms, 100× the others: more of it and the mix's throughput at a given concurrency
/// would measure its sleep rather than the servers.
const ROTATION: [Kind; 20] = {
    use Kind::*;
    [
        Add, List, Add, Resource, Add, Prompt, Add, Fail, Add, List, //
        Add, Resource, Add, Prompt, Add, Slow, List, Resource, Prompt, Fail,
    ]
};

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

/// An answer with a status other than 2xx: the connection itself is still usable.
#[derive(Debug)]
struct HttpStatus(StatusCode, String);

impl std::fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}: {}", self.0, self.1)
    }
}

impl std::error::Error for HttpStatus {}

struct Session {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    key: Option<String>,
    headers: Vec<(String, String)>,
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
        let headers = args
            .headers
            .iter()
            .map(|h| {
                let (name, value) = h.split_once(':').context("--header takes `name: value`")?;
                anyhow::Ok((name.trim().to_owned(), value.trim().to_owned()))
            })
            .collect::<anyhow::Result<_>>()?;
        let mut session = Self {
            sender,
            authority,
            path,
            key: args.key.clone(),
            headers,
            session: None,
            stateless_name: None,
        };
        if args.get {
            return Ok(session);
        }
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
        self.send(Method::POST, body).await
    }

    async fn send(
        &mut self,
        method: Method,
        body: String,
    ) -> anyhow::Result<(String, hyper::HeaderMap)> {
        let mut request = Request::builder().method(method.clone()).uri(&self.path);
        request = request.header("host", &self.authority);
        if method == Method::POST {
            request = request
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
        }
        if let Some(key) = &self.key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
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
            return Err(HttpStatus(status, text).into());
        }
        Ok((text, headers))
    }
}

/// The request body of one call of `kind`.
fn request_body(args: &Args, kind: Kind, id: u64) -> String {
    let call = |name: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        )
    };
    match kind {
        Kind::Ping => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
        Kind::Get => String::new(),
        Kind::Call if args.stateless => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{},{META}}}}}"#,
            args.tool, args.arguments
        ),
        Kind::Call => call(&args.tool, &args.arguments),
        Kind::Add => call("notes.add", r#"{"a":20,"b":22}"#),
        Kind::Slow => call("weather.survey", r#"{"city":"Lima","steps":4}"#),
        Kind::Fail => call("notes.divide", r#"{"a":1,"b":0}"#),
        Kind::List => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#),
        Kind::Resource => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"notes://index"}}}}"#
        ),
        Kind::Prompt => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/get","params":{{"name":"notes.summarize","arguments":{{"name":"welcome"}}}}}}"#
        ),
    }
}

/// The JSON-RPC answer to request `id` in a body: plain JSON, or the SSE stream a node answers
/// with when the call sends notifications first (the slow tool's log messages).
fn rpc_answer(text: &str, id: u64) -> Option<Value> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed).ok();
    }
    trimmed
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").and_then(Value::as_u64) == Some(id))
}

enum Outcome {
    Ok,
    /// The answer the call should get is an error (the failing tool's `isError` result).
    Expected,
    Unexpected(String),
}

/// Whether `text` is the right answer to call `id` of `kind`.
fn check(args: &Args, kind: Kind, id: u64, text: &str) -> Outcome {
    let fits = |ok: bool| if ok { Outcome::Ok } else { Outcome::Unexpected(clip(text)) };
    match kind {
        // The original checks, kept byte for byte so the other benches' figures compare.
        Kind::Ping => fits(text.contains("\"result\":{}") && !text.contains("\"error\"")),
        Kind::Call | Kind::Get => fits(text.contains(&args.expect) && !text.contains("\"error\"")),
        _ => {
            let Some(answer) = rpc_answer(text, id) else {
                return Outcome::Unexpected(format!("no answer to id {id}: {}", clip(text)));
            };
            if answer.get("error").is_some() {
                return Outcome::Unexpected(format!("JSON-RPC error: {}", clip(text)));
            }
            let result = &answer["result"];
            let first_text = result["content"][0]["text"].as_str().unwrap_or_default();
            let is_error = result["isError"].as_bool().unwrap_or(false);
            match kind {
                Kind::Add => fits(!is_error && result["structuredContent"]["result"] == 42),
                Kind::Slow => fits(!is_error && first_text == "surveyed 4 stations in lima"),
                Kind::Fail if is_error && first_text.contains("cannot divide by zero") => {
                    Outcome::Expected
                }
                Kind::Fail => Outcome::Unexpected(format!("not the tool error: {}", clip(text))),
                Kind::List => {
                    let names: Vec<&str> = result["tools"]
                        .as_array()
                        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
                        .unwrap_or_default();
                    fits(
                        ["notes.add", "notes.divide", "weather.survey"]
                            .iter()
                            .all(|n| names.contains(n)),
                    )
                }
                Kind::Resource => fits(
                    result["contents"][0]["text"].as_str() == Some("broth\nnoodles\nwelcome\n"),
                ),
                Kind::Prompt => fits(
                    result["messages"][0]["content"]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("notes://note/welcome")),
                ),
                Kind::Call | Kind::Ping | Kind::Get => unreachable!("checked above"),
            }
        }
    }
}

fn clip(text: &str) -> String {
    let mut end = text.len().min(300);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Shared by the connections: the call count (which also picks each call's slot in the mix and
/// its time under `--rate`), the current interval's figures, and the unexpected errors seen.
struct Shared {
    tickets: AtomicU64,
    interval: Mutex<Tally>,
    examples: Mutex<Vec<String>>,
}

/// Figures of a window: latencies of the correctly answered calls (expected errors included)
/// and `errors` = unexpected ones, overall and per kind (the slow tool is 5% of the mix, so
/// the overall p99 is its 200 ms), the expected errors, and the unexpected ones counted by
/// what they were (`error_kinds`: a refusal is not a failed call).
#[derive(Default)]
struct Tally {
    recorder: Recorder,
    expected: u64,
    kinds: BTreeMap<Kind, Recorder>,
    error_kinds: BTreeMap<String, u64>,
}

/// What an unexpected outcome was, without its details: the text before its first `:`
/// (`HTTP 503 Service Unavailable`, `JSON-RPC error`, `no connection`, …).
fn error_kind(what: &str) -> String {
    what.split(':').next().unwrap_or(what).chars().take(48).collect()
}

impl Tally {
    fn add(&mut self, kind: Kind, latency: Duration, outcome: &Outcome) {
        let of_kind = self.kinds.entry(kind).or_default();
        match outcome {
            Outcome::Ok | Outcome::Expected => {
                self.recorder.record(latency);
                of_kind.record(latency);
            }
            Outcome::Unexpected(what) => {
                self.recorder.errors += 1;
                of_kind.errors += 1;
                *self.error_kinds.entry(error_kind(what)).or_default() += 1;
            }
        }
        if let Outcome::Expected = outcome {
            self.expected += 1;
        }
    }

    fn merge(&mut self, other: Tally) {
        self.recorder.merge(other.recorder);
        self.expected += other.expected;
        for (kind, recorder) in other.kinds {
            self.kinds.entry(kind).or_default().merge(recorder);
        }
        for (what, n) in other.error_kinds {
            *self.error_kinds.entry(what).or_default() += n;
        }
    }

    fn summary(self, elapsed: Duration) -> Value {
        let kinds: serde_json::Map<String, Value> = self
            .kinds
            .into_iter()
            .map(|(kind, recorder)| (kind.name().to_owned(), recorder.summary(elapsed)))
            .collect();
        let mut summary = self.recorder.summary(elapsed);
        summary["expected_errors"] = self.expected.into();
        summary["by_kind"] = kinds.into();
        summary["error_kinds"] = serde_json::to_value(self.error_kinds).unwrap_or_default();
        summary
    }
}

/// How many unexpected errors are printed (stderr) and kept for the summary.
const EXAMPLES: usize = 20;

async fn worker(
    args: Args,
    shared: Arc<Shared>,
    start: Instant,
    warm_until: Instant,
    end: Instant,
) -> anyhow::Result<Tally> {
    let mut session = Some(Session::connect(&args).await?);
    let mut tally = Tally::default();
    let reporting = args.report_every > 0.0;
    let timeout = Duration::from_secs_f64(args.timeout);
    loop {
        let ticket = shared.tickets.fetch_add(1, Ordering::Relaxed);
        if args.rate > 0.0 {
            // Ticket n is due n/rate after the start: the connections together keep the rate,
            // and a slow call only delays its own connection.
            let due = start + Duration::from_secs_f64(ticket as f64 / args.rate);
            if due >= end {
                return Ok(tally);
            }
            tokio::time::sleep_until(due.into()).await;
        }
        if Instant::now() >= end {
            return Ok(tally);
        }
        let kind = if args.mix {
            ROTATION[ticket as usize % ROTATION.len()]
        } else if args.ping {
            Kind::Ping
        } else if args.get {
            Kind::Get
        } else {
            Kind::Call
        };
        let id = ticket + 1;
        let sent = Instant::now();
        let outcome = match session.as_mut() {
            Some(s) => {
                let method = if args.get { Method::GET } else { Method::POST };
                match tokio::time::timeout(timeout, s.send(method, request_body(&args, kind, id)))
                    .await
                {
                    Ok(Ok((text, headers))) => {
                        // The server closes the connection after this answer (a draining node
                        // says so): the next call opens a new one, as HTTP clients do.
                        let closing = headers
                            .get(hyper::header::CONNECTION)
                            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
                        if closing {
                            session = None;
                        }
                        check(&args, kind, id, &text)
                    }
                    Ok(Err(err)) => {
                        // A refusal (e.g. 503 at the in-flight cap) leaves the connection
                        // usable; under the mix it may mean the session is gone, so it is
                        // replaced. Anything else broke the connection.
                        if args.mix || err.downcast_ref::<HttpStatus>().is_none() {
                            session = None;
                        }
                        Outcome::Unexpected(clip(&err.to_string()))
                    }
                    Err(_) => {
                        session = None;
                        Outcome::Unexpected(format!("no answer within {timeout:?}"))
                    }
                }
            }
            None => Outcome::Unexpected("no connection".into()),
        };
        let latency = sent.elapsed();
        if session.is_none() {
            match Session::connect(&args).await {
                Ok(s) => session = Some(s),
                // Not a busy loop while the server is unreachable.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        if sent < warm_until {
            continue;
        }
        if let Outcome::Unexpected(what) = &outcome {
            let mut examples = shared.examples.lock().unwrap_or_else(|e| e.into_inner());
            if examples.len() < EXAMPLES {
                let line = format!("{:.1}s {}: {what}", start.elapsed().as_secs_f64(), kind.name());
                eprintln!("unexpected: {line}");
                examples.push(line);
            }
        }
        tally.add(kind, latency, &outcome);
        if reporting {
            shared.interval.lock().unwrap_or_else(|e| e.into_inner()).add(kind, latency, &outcome);
        }
    }
}

/// One JSON line per `--report-every` seconds of the measured window.
async fn report(shared: Arc<Shared>, every: Duration, warm_until: Instant, end: Instant) {
    // The warm-up's calls are not counted (`worker` skips them), so the first line starts at
    // `warm_until` like the summary.
    tokio::time::sleep_until(warm_until.into()).await;
    let mut from = warm_until;
    while from < end {
        let to = (from + every).min(end);
        tokio::time::sleep_until(to.into()).await;
        let tally = std::mem::take(&mut *shared.interval.lock().unwrap_or_else(|e| e.into_inner()));
        let mut line = tally.summary(to - from);
        line["t_s"] = ((to - warm_until).as_secs_f64().round() as u64).into();
        #[allow(clippy::print_stdout)]
        {
            println!("{line}");
        }
        from = to;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rss_before = args.pid.map(rss_kib).transpose()?;
    let opened =
        if args.idle_sessions > 0 { open_idle(&args, args.idle_sessions).await? } else { 0 };
    let rss_after = args.pid.map(rss_kib).transpose()?;
    let shared = Arc::new(Shared {
        tickets: AtomicU64::new(0),
        interval: Mutex::default(),
        examples: Mutex::default(),
    });
    let start = Instant::now();
    let warm_until = start + Duration::from_secs_f64(args.warmup);
    let end = warm_until + Duration::from_secs_f64(args.seconds);
    let reporter = (args.report_every > 0.0).then(|| {
        let every = Duration::from_secs_f64(args.report_every);
        tokio::spawn(report(shared.clone(), every, warm_until, end))
    });
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|_| tokio::spawn(worker(args.clone(), shared.clone(), start, warm_until, end)))
        .collect();
    let mut total = Tally::default();
    for task in tasks {
        total.merge(task.await??);
    }
    if let Some(reporter) = reporter {
        reporter.await?;
    }
    let extended = args.mix || args.rate > 0.0 || args.report_every > 0.0;
    let mut summary = if extended {
        let mut summary = total.summary(Duration::from_secs_f64(args.seconds));
        let examples = shared.examples.lock().unwrap_or_else(|e| e.into_inner());
        summary["unexpected_examples"] = examples.clone().into();
        summary
    } else {
        total.recorder.summary(Duration::from_secs_f64(args.seconds))
    };
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
