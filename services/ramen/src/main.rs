//! `ramen`: the all-in-one binary. `ramen up` runs every service on one machine; `ramen serve
//! <service>` runs one in cloud mode; `ramen worker` runs a worker node.

mod admin;
mod client;
mod migrate;
mod nats_auth;
mod up;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use ramen_config::Requirement;
// The serving binaries' allocator (mimalloc): see libs/alloc.
use ramen_alloc as _;

#[derive(Parser)]
#[command(name = "ramen", version, about = "Host MCP servers for teams")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: client::Common,
}

#[derive(Subcommand)]
enum Command {
    /// Run everything on this machine: console, API, MCP edge, a local zone, and a supervised
    /// nats-server. State lives in the data directory (RAMEN_DATA_DIR).
    Up,
    /// Run one service (usually in cloud mode: RAMEN_MODE=cloud).
    Serve {
        #[arg(value_enum)]
        service: Service,
    },
    /// Run one worker node (a runner in front of a Python runtime), or build a snapshot's
    /// Python environment where workers run (`--build-env`, what a zone's provider runs once
    /// per deploy).
    Worker {
        #[arg(long, required_unless_present = "build_env", conflicts_with = "build_env")]
        config: Option<PathBuf>,
        #[arg(long)]
        build_env: Option<PathBuf>,
    },
    /// Operator tasks run against the store directly (`ramen admin reseal`).
    Admin {
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
    /// Move a `ramen up` installation to cloud mode (`ramen migrate to-cloud`).
    Migrate {
        #[command(subcommand)]
        command: migrate::MigrateCommand,
    },
    /// NATS authentication for split and cloud deployments (`ramen nats-auth init --out DIR`):
    /// the server's operator configuration and one user per service.
    NatsAuth {
        #[command(subcommand)]
        command: nats_auth::NatsAuthCommand,
    },
    #[command(flatten)]
    Client(client::ClientCommand),
}

#[derive(Clone, Copy, ValueEnum)]
enum Service {
    ApiGateway,
    Auth,
    Deployer,
    ZoneManager,
    Rebalancer,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Up => up::main(),
        Command::Worker { config: Some(config), .. } => ramen_runner::cli::run(config),
        Command::Worker { build_env: Some(spec), .. } => ramen_runner::cli::build_env(spec),
        Command::Worker { .. } => ExitCode::from(64),
        Command::Serve { service } => serve(service),
        Command::Admin { command } => admin::main(command),
        Command::Migrate { command } => migrate::main(command),
        Command::NatsAuth { command } => nats_auth::main(command),
        Command::Client(command) => client_main(command, cli.common),
    }
}

fn client_main(command: client::ClientCommand, common: client::Common) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(client::run(command, common)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

fn serve(service: Service) -> ExitCode {
    use Requirement::{Mongo, NatsSigningKey, S3};
    match service {
        Service::ApiGateway => ramen_service::main("api-gateway", &[], ramen_api_gateway::start),
        Service::Auth => ramen_service::main("auth", &[Mongo], ramen_auth::start),
        Service::Deployer => ramen_service::main("deployer", &[Mongo, S3], ramen_deployer::start),
        Service::ZoneManager => {
            ramen_service::main("zone-manager", &[Mongo, NatsSigningKey], ramen_zone_manager::start)
        }
        Service::Rebalancer => ramen_service::main("rebalancer", &[Mongo], ramen_rebalancer::start),
    }
}
