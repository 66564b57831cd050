//! The local zone's environment builder: `<worker binary> [worker] --build-env <spec>`, the
//! worker's own code on the worker's own Python, run once per deploy in the placement's
//! directory (the Kubernetes provider runs the same command as a Job of the worker image).

use std::time::Duration;

use ramen_node_contract::SnapshotRef;
use ramen_node_contract::environment::{BuildOutcome, BuildSpec};
use tokio::process::Command;

use super::layout::{Layout, private_dir, write_private};
use super::settings::LocalSettings;
use crate::provider::ProviderError;

pub(super) async fn run(
    settings: &LocalSettings,
    layout: &Layout,
    group: &str,
    snapshot: &SnapshotRef,
    timeout: Duration,
) -> Result<BuildOutcome, ProviderError> {
    let dir = layout.dir.join("build");
    private_dir(&dir)?;
    let spec = BuildSpec {
        group: group.to_owned(),
        snapshot: snapshot.clone(),
        blob: settings.blob.clone(),
        python: settings.python.clone(),
        site_packages: settings.site_packages.clone(),
        pip_args: settings.pip_args.clone(),
        workdir: dir.join("work"),
        sandbox: ramen_node_contract::SandboxConfig {
            enabled: settings.sandbox,
            ..Default::default()
        },
    };
    let text = toml::to_string_pretty(&spec).map_err(|e| ProviderError::Failed(e.to_string()))?;
    let spec_path = dir.join(format!("{}.toml", uuid::Uuid::now_v7()));
    write_private(&spec_path, text.as_bytes())?;
    let worker = &settings.command;
    let mut command = Command::new(&worker.program);
    command.args(&worker.leading_args).arg("--build-env").arg(&spec_path);
    super::spawn::scrubbed(&mut command);
    command.kill_on_drop(true);
    let ran = tokio::time::timeout(timeout, command.output()).await;
    let _ = std::fs::remove_file(&spec_path);
    let output = match ran {
        Ok(output) => output
            .map_err(|e| ProviderError::io(format!("starting {}", worker.program.display()), e))?,
        Err(_) => {
            return Err(ProviderError::Failed(format!(
                "installing the requirements took longer than {}s",
                timeout.as_secs()
            )));
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().rev().find_map(|l| serde_json::from_str::<BuildOutcome>(l).ok()) {
        Some(outcome) => Ok(outcome),
        None => Err(ProviderError::Failed(format!(
            "the environment builder answered nothing ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
    }
}
