//! `ramen up`: every service in one process on the embedded adapters, with a supervised
//! `nats-server` child as the bus. The child runs in NATS operator mode with keys generated
//! into `<data_dir>/keys/nats` on first start: the process connects as the `control-plane`
//! user (every service's permissions: they share one connection and one address space), the
//! zone-manager mints each placement's node user, and nothing connects without credentials.

use std::process::ExitCode;

use ramen_bus::auth::{Role, SERVER_CONFIG_FILE};
use ramen_bus::{NatsSupervisor, ServerAuth, SupervisorConfig};
use ramen_config::{Config, EXIT_CONFIG, Secret};
use ramen_lifecycle::{Shutdown, listen_for_signals};
use ramen_service::{Platform, Running};

pub fn main() -> ExitCode {
    let config = match Config::load() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("ramen up: {err}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    ramen_service::forbid_dumping("ramen up");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen up: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let mut telemetry = match ramen_telemetry::init("ramen", &config.log) {
            Ok(telemetry) => telemetry,
            Err(err) => {
                eprintln!("ramen up: {err}");
                return ExitCode::from(EXIT_CONFIG as u8);
            }
        };
        let code = match run(config).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                tracing::error!("ramen up failed: {err:#}");
                ExitCode::FAILURE
            }
        };
        telemetry.shutdown();
        code
    })
}

async fn run(mut config: Config) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    listen_for_signals(shutdown.clone())?;
    let nats = if config.nats.url.is_empty() {
        let auth = own_bus_auth(&mut config)?;
        let binary = Some(config.nats.binary.clone()).filter(|b| !b.is_empty()).map(Into::into);
        let supervisor = NatsSupervisor::start(SupervisorConfig {
            data_dir: config.data_dir.clone(),
            binary,
            port: None,
            auth: Some(auth),
        })
        .await?;
        Some(supervisor)
    } else {
        None
    };
    let url = nats.as_ref().map_or_else(|| config.nats.url.clone(), NatsSupervisor::url);
    let drain = config.drain.timeout;
    let data_dir = config.data_dir.clone();
    let platform = Platform::open(config, &url, shutdown.clone()).await?;
    let startup = ramen_lifecycle::Startup::default();
    platform.health.add(startup.clone());
    let (admin, _admin_task) = platform.serve_admin().await?;

    let (services, bootstrap) = start_services(&platform).await?;
    startup.done();
    let api = services.iter().find(|s| s.name == "api-gateway").map(|s| s.addr);
    if let Some(api) = api {
        tracing::info!(api = %format!("http://{api}/api"), openapi = %format!("http://{api}/api/openapi.json"), mcp_edge = %format!("http://{api}/mcp/<group>/<environment>"), "ramen is up");
    }
    if let Some(first_admin) = bootstrap {
        print_bootstrap(&first_admin);
    }
    tracing::info!(%admin, nats = %url, data_dir = %data_dir.display(), "health on /healthz and /readyz; stop with Ctrl-C");

    shutdown.wait().await;
    platform.health.set_draining();
    for service in services {
        service.join(drain).await;
    }
    if let Err(err) = platform.tasks.shutdown(drain).await {
        tracing::warn!(%err, "background tasks did not stop in time");
    }
    if let Some(nats) = nats {
        nats.shutdown().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// The supervised server's operator mode: the key set in `<data_dir>/keys/nats` (generated on
/// first start, then kept), the control plane's credentials and the node signing key.
fn own_bus_auth(config: &mut Config) -> anyhow::Result<ServerAuth> {
    let dir = config.data_dir.join("keys").join("nats");
    let names = ramen_service::bus_names(&config.nats);
    let keys = ramen_bus::auth::write_bundle(&dir, &names)?;
    let credentials = keys.credentials(Role::ControlPlane, &names)?;
    config.nats.credentials = Secret::new(credentials.to_text());
    config.nats.signing_key = Secret::new(keys.node_signing_seed()?);
    Ok(ServerAuth { config_file: dir.join(SERVER_CONFIG_FILE), account: keys.account() })
}

/// Shows the first-boot admin credentials once, on the terminal that ran `ramen up` (auth also
/// logs them once).
fn print_bootstrap(admin: &ramen_auth::BootstrapAdmin) {
    eprintln!();
    eprintln!("  First start: a super admin was created.");
    eprintln!("    email:              {}", admin.email);
    eprintln!("    one-time password:  {}", admin.one_time_password());
    eprintln!("  Sign in with it and set your own password; it is not shown again.");
    eprintln!();
}

/// Starts the services in dependency order: auth first (everyone asks it), the gateway last.
/// Also returns the bootstrap admin when auth created one (first start on an empty store).
async fn start_services(
    platform: &Platform,
) -> anyhow::Result<(Vec<Running>, Option<ramen_auth::BootstrapAdmin>)> {
    let auth = ramen_auth::launch(platform.clone()).await?;
    let bootstrap = auth.bootstrap;
    let mut running = vec![auth.running];
    running.push(ramen_zone_manager::start(platform.clone()).await?);
    running.push(ramen_deployer::start(platform.clone()).await?);
    running.push(ramen_rebalancer::start(platform.clone()).await?);
    running.push(ramen_api_gateway::start(platform.clone()).await?);
    Ok((running, bootstrap))
}
