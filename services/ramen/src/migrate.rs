//! `ramen migrate to-cloud`: the move from `ramen up` to the split services (see
//! `ramen-migrate` for what is copied and why it is safe to re-run).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use ramen_config::{Config, EXIT_CONFIG};
use ramen_crypto::seal::Sealer;
use ramen_migrate::{MigrateError, Options, Progress, Source, Tally, Target};

#[derive(Subcommand)]
pub enum MigrateCommand {
    /// Copy a `ramen up` data dir (every service's store and the snapshots and environments in
    /// its blob directory) into MongoDB and S3, the targets the cloud services are configured
    /// with (RAMEN_MONGO_URI, RAMEN_MONGO_DB, RAMEN_S3_*; from the environment or --config).
    /// Needs the RAMEN_SECRETS_KEY the secrets were sealed with; stop `ramen up` first. Safe to
    /// re-run: only what differs on the target is written.
    ToCloud(ToCloud),
}

#[derive(Args)]
pub struct ToCloud {
    /// The data dir `ramen up` ran with (default: RAMEN_DATA_DIR, else ramen up's default).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// The target's configuration file, as the cloud services read it (default: ramen.toml
    /// when present; RAMEN_* variables override it).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Compare with the target and report what would be written; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Documents or objects copied at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
}

pub fn main(command: MigrateCommand) -> ExitCode {
    let MigrateCommand::ToCloud(args) = command;
    let (config, data_dir) = match target_config(&args) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("ramen migrate to-cloud: {message}");
            return ExitCode::from(EXIT_CONFIG as u8);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ramen migrate to-cloud: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&config, data_dir, &args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ramen migrate to-cloud: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The target configuration and the source data dir. The configuration is loaded as the
/// services load theirs, but validated as local mode: the migration needs the store, the
/// blob store and the secrets key, not the bus or the signing keys of a running service.
fn target_config(args: &ToCloud) -> Result<(Config, PathBuf), String> {
    let file = args.config.clone().unwrap_or_else(|| PathBuf::from("ramen.toml"));
    if args.config.is_some() && !file.is_file() {
        return Err(format!("--config {}: no such file", file.display()));
    }
    let figment = Config::figment(Some(&file));
    let key: String = figment.extract_inner("auth.secrets_key").unwrap_or_default();
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => {
            figment.extract_inner::<PathBuf>("data_dir").map_err(|e| format!("data_dir: {e}"))?
        }
    };
    if key.trim().is_empty() {
        let key_file = Source::key_file_in(&data_dir);
        return Err(MigrateError::SecretsKeyUnset { key_file }.to_string());
    }
    let config =
        Config::from_figment(figment.merge(("mode", "local"))).map_err(|e| e.to_string())?;
    Ok((config, data_dir))
}

async fn run(config: &Config, data_dir: PathBuf, args: &ToCloud) -> anyhow::Result<()> {
    let sealer = Sealer::from_config(&config.auth)?;
    let source = Source::open(&data_dir).await?;
    let target = Target::open(config, &source).await?;
    let dry = if args.dry_run { " (dry run: nothing is written)" } else { "" };
    eprintln!("migrating {} to {}{dry}", data_dir.display(), target.description());
    let options = Options { dry_run: args.dry_run, concurrency: args.concurrency.into() };
    let written = if args.dry_run { "to write" } else { "written" };
    let progress = move |event: Progress| match event {
        Progress::KeyChecked { sealed: 0 } => eprintln!("secrets key: no sealed values to open"),
        Progress::KeyChecked { sealed } => {
            eprintln!("secrets key: opens all {sealed} sealed values")
        }
        Progress::Blobs { done, total } => eprintln!("blobs: {done}/{total} objects compared"),
        Progress::Collection { tally, .. } if tally.total == 0 => {}
        Progress::Collection { name, tally } => {
            eprintln!("{name}: {}", counts(&tally, "documents", written));
        }
    };
    let report = ramen_migrate::migrate(&source, &target, &sealer, &options, &progress).await?;
    let documents = report.documents();
    eprintln!(
        "done: {} ({} bytes); {} in {} collections",
        counts(&report.blobs, "objects", written),
        report.blobs.bytes,
        counts(&documents, "documents", written),
        report.collections.len(),
    );
    if args.dry_run {
        eprintln!("run again without --dry-run to write");
        return Ok(());
    }
    eprintln!("start the cloud services on the target (with the same RAMEN_SECRETS_KEY)");
    if !report.redeploy.is_empty() {
        eprintln!(
            "workers of local zones are processes of this host and do not move; deploy these \
             environments again on the new stack (or move them to cloud zones first):"
        );
        for p in &report.redeploy {
            eprintln!("  ramen deploy {} -g {}   (zone {})", p.environment, p.group, p.zone);
        }
    }
    Ok(())
}

fn counts(tally: &Tally, what: &str, written: &str) -> String {
    format!("{} {what}, {} {written}, {} unchanged", tally.total, tally.written, tally.unchanged)
}
