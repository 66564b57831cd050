//! `ramen admin …`: operator tasks that work on the store directly.

use std::process::ExitCode;

use clap::Subcommand;
use ramen_config::{Config, EXIT_CONFIG, Requirement};

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Re-seal every secret under the current RAMEN_SECRETS_KEY. Run after a rotation, with the
    /// old key as RAMEN_SECRETS_PREVIOUS_KEY; safe to repeat and to run while serving on MongoDB
    /// (the embedded store of `ramen up` is locked while it runs: stop it first).
    Reseal,
}

pub fn main(command: AdminCommand) -> ExitCode {
    let config = match Config::load_for(&[Requirement::Mongo]) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("ramen admin: {err}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen admin: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let AdminCommand::Reseal = command;
    match runtime.block_on(reseal(&config)) {
        Ok(report) => {
            eprintln!(
                "resealed {} secrets; {} were already under the current key",
                report.resealed, report.current
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("ramen admin reseal: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn reseal(config: &Config) -> anyhow::Result<ramen_auth::ResealReport> {
    let store_config = ramen_store::StoreConfig::select(
        config.mongo.uri.expose(),
        &config.mongo.db,
        config.data_dir.join("store"),
    );
    let store = ramen_store::open(&store_config).await?;
    let sealer = ramen_auth::seal::Sealer::from_config(&config.auth)?;
    let collections = ramen_auth::Collections::new(store);
    Ok(ramen_auth::reseal(&collections.secrets, &sealer).await?)
}
