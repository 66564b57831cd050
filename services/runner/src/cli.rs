//! Entry point shared by `ramen-runner` and `ramen worker`.

use std::path::PathBuf;
use std::process::ExitCode;

use ramen_config::{EXIT_CONFIG, LogConfig, LogFormat};
use ramen_lifecycle::{Shutdown, listen_for_signals};
use ramen_telemetry::Metrics;

use crate::{NodeConfig, Worker};

pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, path] if flag == "--config" => run(PathBuf::from(path)),
        [flag, path] if flag == "--build-env" => build_env(PathBuf::from(path)),
        _ => {
            eprintln!("usage: ramen-runner --config <node.toml> | --build-env <build.toml>");
            ExitCode::from(64)
        }
    }
}

/// Builds (or finds) the environment a build spec describes and prints the outcome as one
/// JSON line; exits 1 when the build failed (the outcome says why).
pub fn build_env(spec_path: PathBuf) -> ExitCode {
    let text = match std::fs::read_to_string(&spec_path) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("ramen worker: cannot read {}: {err}", spec_path.display());
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    let mut spec: ramen_node_contract::environment::BuildSpec = match toml::from_str(&text) {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("ramen worker: invalid build spec {}: {err}", spec_path.display());
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    // A pod's own scratch volume, as for a node.
    if let Some(dir) = var(ramen_node_contract::WORKDIR_VAR).filter(|d| !d.is_empty()) {
        spec.workdir = PathBuf::from(dir);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen worker: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match crate::worker::open_blob_at(&spec.blob, &spec.workdir).await {
            Ok(blob) => crate::build_env::build(&spec, blob).await,
            Err(err) => ramen_node_contract::environment::BuildOutcome {
                error: Some(format!("blob store: {err}")),
                ..Default::default()
            },
        }
    });
    let failed = outcome.error.is_some();
    match serde_json::to_string(&outcome) {
        // The outcome is the command's answer, read by the provider that ran it.
        #[allow(clippy::print_stdout)]
        Ok(line) => println!("{line}"),
        Err(err) => eprintln!("ramen worker: {err}"),
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Loads the node config (exit 78 when it is unusable), runs the node until SIGTERM, drains.
pub fn run(config_path: PathBuf) -> ExitCode {
    let config = match NodeConfig::load(&config_path).map(|c| c.with_pod_overrides(var)) {
        Ok(Ok(config)) => config,
        Ok(Err(reason)) => {
            eprintln!("ramen worker: {reason}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
        Err(err) => {
            eprintln!("ramen worker: {err}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    let format = if std::env::var("RAMEN_LOG_FORMAT").is_ok_and(|f| f == "json") {
        LogFormat::Json
    } else {
        LogFormat::Pretty
    };
    let log = LogConfig {
        format,
        level: std::env::var("RAMEN_LOG_LEVEL").unwrap_or_else(|_| "info".into()),
    };
    // The multi-threaded scheduler even with one worker, so raising `threads` takes no other
    // code path.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen worker: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let mut telemetry = match ramen_telemetry::init("ramen-runner", &log) {
            Ok(telemetry) => telemetry,
            Err(err) => {
                eprintln!("ramen worker: {err}");
                return ExitCode::from(EXIT_CONFIG as u8);
            }
        };
        let shutdown = Shutdown::new();
        if let Err(err) = listen_for_signals(shutdown.clone()) {
            tracing::error!(%err, "cannot install signal handlers");
            return ExitCode::FAILURE;
        }
        let worker = match Worker::start(config, Metrics::default()).await {
            Ok(worker) => worker,
            Err(err) => {
                tracing::error!(%err, "the node did not start");
                return ExitCode::FAILURE;
            }
        };
        tracing::info!(mcp = %worker.mcp_addr, mcp_local = ?worker.mcp_local, admin = %worker.admin_addr, node = %worker.config.node_id, "node serving");
        let admin_stop = worker.stop_token();
        tokio::select! {
            _ = shutdown.wait() => {}
            _ = admin_stop.cancelled() => {}
        }
        worker.shutdown().await;
        telemetry.shutdown();
        ExitCode::SUCCESS
    })
}
