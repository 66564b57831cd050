//! The environment builder on Kubernetes: one pod of the worker image in the placement's
//! namespace (`restartPolicy: Never`, a deadline), running `ramen worker --build-env` on a
//! spec mounted from a Secret, so the environment is built on the workers' own interpreter and
//! platform. Its answer is the last JSON line of its log; the pod and its Secret are removed
//! whatever happened.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::LogParams;
use ramen_node_contract::SnapshotRef;
use ramen_node_contract::environment::{BuildOutcome, BuildSpec};
use tokio::time::Instant;

use super::Placement;
use super::clusters::api_error;
use super::manifests::{self, DATA_DIR};
use super::objects::{apply, create, delete, get};
use super::pods;
use crate::provider::ProviderError;

pub(super) async fn run(
    placement: &Placement<'_>,
    snapshot: &SnapshotRef,
    timeout: Duration,
) -> Result<BuildOutcome, ProviderError> {
    let settings = placement.settings;
    let name = format!("ramen-build-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let spec = BuildSpec {
        group: placement.target.group.to_owned(),
        snapshot: snapshot.clone(),
        blob: settings.blob.clone(),
        python: settings.python(),
        site_packages: settings.site_packages(),
        pip_args: settings.kubernetes.pip_args.clone(),
        workdir: format!("{DATA_DIR}/build").into(),
        ..BuildSpec::default()
    };
    let text = toml::to_string_pretty(&spec).map_err(|e| ProviderError::Failed(e.to_string()))?;
    let secrets = placement.api::<Secret>();
    let pods_api = placement.api::<Pod>();
    apply(&secrets, &manifests::builder_secret(&placement.target, &name, text.into_bytes()))
        .await?;
    let deadline_seconds = timeout.as_secs().max(1) as i64;
    let pod = manifests::builder_pod(&placement.target, &name, &name, settings, deadline_seconds);
    let outcome = match create(&pods_api, &pod).await {
        Ok(_) => follow(placement, &pods_api, &name, Instant::now() + timeout).await,
        Err(err) => Err(err),
    };
    // Best effort: a left-over builder is labelled and goes with the namespace.
    for result in [delete(&pods_api, &name).await, delete(&secrets, &name).await] {
        if let Err(err) = result {
            tracing::warn!(%err, builder = %name, "cleaning up the environment builder");
        }
    }
    outcome
}

async fn follow(
    placement: &Placement<'_>,
    api: &kube::Api<Pod>,
    name: &str,
    deadline: Instant,
) -> Result<BuildOutcome, ProviderError> {
    let interval = placement.settings.kubernetes.poll_interval;
    loop {
        let pod = get(api, name).await?.ok_or_else(|| {
            ProviderError::Failed(format!("the environment builder pod {name} disappeared"))
        })?;
        let phase = pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
        if phase == "Succeeded" || phase == "Failed" {
            let log = api
                .logs(name, &LogParams { container: Some("build".into()), ..Default::default() })
                .await
                .map_err(|e| api_error(&format!("reading the log of {name}"), e))?;
            return match log
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str::<BuildOutcome>(l).ok())
            {
                Some(outcome) => Ok(outcome),
                None => Err(ProviderError::Failed(format!(
                    "the environment builder {name} ended {phase} without an answer: {}",
                    tail(&log)
                ))),
            };
        }
        if Instant::now() + interval > deadline {
            let why = pods::not_ready_reason(&pod).map(|r| r.0).unwrap_or(phase);
            return Err(ProviderError::Failed(format!(
                "installing the requirements did not finish in time; the builder pod {name}: {why}"
            )));
        }
        tokio::time::sleep(interval).await;
    }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}
