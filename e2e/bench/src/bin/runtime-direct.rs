//! `runtime-direct`: calls a tool on the Python runtime directly over its framed protocol (no
//! HTTP, no MCP session, no policy) at N concurrent callers — the baseline that isolates the
//! node's own overhead. Prints one JSON summary line.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Parser;
use ramen_bench::Recorder;
use ramen_runner::runtime::{CallEvent, Load, Runtime, RuntimeSpec};

#[derive(Parser, Clone)]
struct Args {
    /// Interpreter with the package's dependencies (e.g. the test venv's python).
    #[arg(long)]
    python: PathBuf,
    /// Directory containing the `ramen_runtime` package.
    #[arg(long)]
    runtime_dir: PathBuf,
    /// The repo snapshot to load.
    #[arg(long)]
    root: PathBuf,
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    #[arg(long, default_value = "10")]
    seconds: f64,
    #[arg(long, default_value = "2")]
    warmup: f64,
    #[arg(long, default_value = "notes.add")]
    tool: String,
    #[arg(long, default_value = r#"{"a":20,"b":22}"#)]
    arguments: String,
    /// The session's client description the node adds to every call frame
    /// (`{"protocolVersion","capabilities","clientInfo","sessionId"}`), so the runtime does
    /// the same work per call as behind a node.
    #[arg(long)]
    client: Option<String>,
    /// Who the node says is calling (`{"kind":"key",...}`), added to every call frame as the
    /// node adds it for a client that signed in: the runtime binds it for the call, which
    /// costs the runtime the same behind a node as here.
    #[arg(long)]
    caller: Option<String>,
    /// Run the runtime without the node's confinement (to measure what it costs).
    #[arg(long)]
    unconfined: bool,
}

async fn caller(runtime: Runtime, args: Args, warm_until: Instant, end: Instant) -> Recorder {
    let mut recorder = Recorder::default();
    let name = serde_json::to_string(&args.tool).unwrap();
    let client = args.client.as_deref().map(|c| format!(r#","client":{c}"#)).unwrap_or_default();
    let caller = args.caller.as_deref().map(|c| format!(r#","caller":{c}"#)).unwrap_or_default();
    while Instant::now() < end {
        let sent = Instant::now();
        let outcome = match runtime.call(|id| {
            format!(
                r#"{{"id":{id},"op":"call_tool","name":{name},"arguments":{}{client}{caller}}}"#,
                args.arguments
            )
            .into_bytes()
        }) {
            Ok((_, mut events)) => loop {
                match events.recv().await {
                    Some(CallEvent::Done(result)) => break result.is_ok(),
                    Some(_) => continue,
                    None => break false,
                }
            },
            Err(_) => false,
        };
        if sent < warm_until {
            continue;
        }
        if outcome { recorder.record(sent.elapsed()) } else { recorder.errors += 1 }
    }
    recorder
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let stop = tokio_util::sync::CancellationToken::new();
    // Confined as on a node (unless --unconfined), so the figures include what it costs.
    let scratch = std::env::temp_dir().join(format!("ramen-runtime-direct-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let group_code = ramen_runner::confine::GroupCode {
        confined: !args.unconfined,
        read: Vec::new(),
        scratch: scratch.clone(),
        connect_ports: Vec::new(),
    };
    let runtime = Runtime::start(
        RuntimeSpec {
            python: args.python.clone(),
            runtime_dir: args.runtime_dir.clone(),
            namespace: true,
            ready_timeout: Duration::from_secs(60),
            group_code,
        },
        Default::default(),
        stop.clone(),
    );
    let report = runtime.load(Load { root: args.root.clone(), env: Vec::new() }).await?;
    if !report.load_errors().is_empty() {
        bail!("packages failed to load: {:?}", report.load_errors());
    }
    let warm_until = Instant::now() + Duration::from_secs_f64(args.warmup);
    let end = warm_until + Duration::from_secs_f64(args.seconds);
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|_| tokio::spawn(caller(runtime.clone(), args.clone(), warm_until, end)))
        .collect();
    let mut total = Recorder::default();
    for task in tasks {
        total.merge(task.await?);
    }
    let mut summary = total.summary(Duration::from_secs_f64(args.seconds));
    summary["concurrency"] = args.concurrency.into();
    stop.cancel();
    let _ = std::fs::remove_dir_all(&scratch);
    #[allow(clippy::print_stdout)]
    {
        println!("{summary}");
    }
    Ok(())
}
