//! Bringing a track's Deployment to a plan and watching it get there.
//!
//! A restart in place is a new pod template: the track's config Secret (content-addressed, so
//! it changes exactly when the config does) and the `restarted-at` annotation. The Deployment
//! rolls one pod at a time (surge 1, unavailable 0), so the track keeps serving on its old pods
//! until each new one is ready. Done is the Deployment's own word: observed generation caught
//! up, every replica updated, ready and no old one left. Not done by the deadline is an answer
//! naming each pod that is not running and why; the track is put back on the template it ran,
//! so a stuck rollout does not stay half-applied.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Pod, Secret};
use ramen_node_contract::{NodeConfig, PolicyConfig};
use tokio::time::Instant;

use super::Placement;
use super::manifests::{
    self, COMMIT_ANNOTATION, CONFIG_ANNOTATION, DATA_DIR, HPA, POLICY_DIR, POLICY_FILE,
    RESTARTED_ANNOTATION, TEMPLATE_FILE, TRACK_LABEL, TrackSpec,
};
use super::objects::{apply, delete, get, list};
use super::pods;
use super::settings::{ADMIN_PORT, GRPC_PORT, MCP_PORT};
use crate::model::{PlacementRecord, TrackKind};
use crate::provider::{
    ConfigTemplate, ProviderError, RolloutPlan, RolloutReport, TemplateChoice, WorkerView,
};

pub(super) async fn run(
    placement: &Placement<'_>,
    record: &PlacementRecord,
    plan: RolloutPlan,
) -> Result<RolloutReport, ProviderError> {
    let deadline = Instant::now() + plan.timeout;
    let deployments = placement.api::<Deployment>();
    let name = plan.track.name();
    let current = get(&deployments, name).await?;
    let running = current.as_ref().and_then(|d| running_spec(d, record.size));
    let running_template = match &running {
        Some(spec) => read_template(placement, &spec.config_secret).await?,
        None => None,
    };
    let target_template = match (plan.template, running_template.clone()) {
        (TemplateChoice::Keep, Some(template)) => Some(template),
        _ => read_template(placement, manifests::WRITTEN_SECRET).await?,
    };
    let Some(template) = target_template else {
        if plan.replicas == 0 {
            if let Some(mut spec) = running.clone() {
                spec.replicas = Some(0);
                scale_autoscaler(placement, record, plan.track, 0).await?;
                apply(
                    &deployments,
                    &manifests::deployment(&placement.target, &spec, placement.settings),
                )
                .await?;
            }
            return report(placement, record, &plan, Vec::new(), String::new()).await;
        }
        return Err(ProviderError::NothingDeployed(record.label()));
    };

    let secret = track_config(placement, record, plan.track, &template).await?;
    let restarted_at = match (&running, plan.restart_existing) {
        (Some(spec), false) => spec.restarted_at.clone(),
        _ => crate::model::now_ms().to_string(),
    };
    let replicas = replicas_for(plan.track, plan.replicas, current.as_ref());
    let spec = TrackSpec {
        track: plan.track,
        replicas: Some(replicas),
        size: record.size,
        config_secret: secret,
        commit: template.commit().to_owned(),
        restarted_at,
    };
    scale_autoscaler(placement, record, plan.track, plan.replicas).await?;
    apply(&deployments, &manifests::deployment(&placement.target, &spec, placement.settings))
        .await?;
    let pods_api = placement.api::<Pod>();
    let not_ready = match wait(placement, name, deadline).await? {
        Wait::Done => Vec::new(),
        Wait::Stuck => {
            let stuck = stuck_pods(placement, plan.track).await?;
            let mut not_ready = Vec::new();
            for pod in &stuck {
                not_ready.push(pods::not_ready(&pods_api, pod).await);
            }
            if not_ready.is_empty() {
                not_ready.push(crate::provider::NotReadyWorker {
                    id: name.to_owned(),
                    reason: deployment_reason(&deployments, name).await,
                    exit_code: None,
                    last_log_lines: Vec::new(),
                });
            }
            if let Some(previous) = running.filter(|r| {
                r.config_secret != spec.config_secret || r.restarted_at != spec.restarted_at
            }) {
                tracing::warn!(
                    track = name,
                    namespace = placement.target.namespace,
                    "not ready on the new template; putting the track back on the one it ran"
                );
                let back = TrackSpec { replicas: Some(replicas), ..previous };
                apply(
                    &deployments,
                    &manifests::deployment(&placement.target, &back, placement.settings),
                )
                .await?;
            }
            not_ready
        }
    };
    let commit = if not_ready.is_empty() {
        prune_configs(placement, plan.track, &spec.config_secret, current.as_ref()).await?;
        template.commit().to_owned()
    } else {
        running_template.as_ref().map_or(String::new(), |t| t.commit().to_owned())
    };
    report(placement, record, &plan, not_ready, commit).await
}

/// The replicas a rollout applies. A stable track's HPA moves them between the count and twice
/// it by load; a rollout (a deploy's restart, a new count) keeps what the HPA chose within the
/// new bounds instead of dropping a busy zone back to its floor mid-deploy.
fn replicas_for(track: TrackKind, count: u32, current: Option<&Deployment>) -> u32 {
    let scaled = current.and_then(|d| d.spec.as_ref()?.replicas).map(|r| r.max(0) as u32);
    match (track, scaled) {
        (TrackKind::Worker, Some(scaled)) if count > 0 => scaled.clamp(count, 2 * count),
        _ => count,
    }
}

/// The template fields of a Deployment ramen rendered.
fn running_spec(deployment: &Deployment, size: crate::model::SizeClass) -> Option<TrackSpec> {
    let spec = deployment.spec.as_ref()?;
    let template_meta = spec.template.metadata.as_ref()?;
    let annotations = template_meta.annotations.as_ref()?;
    let track =
        template_meta.labels.as_ref()?.get(TRACK_LABEL).and_then(|t| TrackKind::from_name(t))?;
    Some(TrackSpec {
        track,
        replicas: spec.replicas.map(|r| r.max(0) as u32),
        size,
        config_secret: annotations.get(CONFIG_ANNOTATION)?.clone(),
        commit: annotations.get(COMMIT_ANNOTATION).cloned().unwrap_or_default(),
        restarted_at: annotations.get(RESTARTED_ANNOTATION).cloned().unwrap_or_default(),
    })
}

async fn read_template(
    placement: &Placement<'_>,
    secret: &str,
) -> Result<Option<ConfigTemplate>, ProviderError> {
    let Some(found) = get(&placement.api::<Secret>(), secret).await? else { return Ok(None) };
    let Some(bytes) = found.data.as_ref().and_then(|d| d.get(TEMPLATE_FILE)) else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes.0).map(Some).map_err(|e| {
        ProviderError::Failed(format!("Secret {secret} holds an unreadable config template: {e}"))
    })
}

/// Applies the track's config Secret for `template` and answers its name.
async fn track_config(
    placement: &Placement<'_>,
    record: &PlacementRecord,
    track: TrackKind,
    template: &ConfigTemplate,
) -> Result<String, ProviderError> {
    let node = node_config(placement, record, track, template);
    let node_toml =
        toml::to_string_pretty(&node).map_err(|e| ProviderError::Failed(e.to_string()))?;
    let template_json =
        serde_json::to_vec(template).map_err(|e| ProviderError::Failed(e.to_string()))?;
    let name = manifests::track_secret_name(track, node_toml.as_bytes(), &template_json);
    let mut secret =
        manifests::track_secret(&placement.target, &name, node_toml.into_bytes(), template_json);
    secret
        .metadata
        .labels
        .get_or_insert_default()
        .insert(TRACK_LABEL.to_owned(), track.name().to_owned());
    apply(&placement.api::<Secret>(), &secret).await?;
    Ok(name)
}

/// The node config of a track's pods. The live policy is not in it (the pods follow the policy
/// Secret), so a policy change never changes the config and never restarts a pod; only the
/// node-local parts are.
pub(super) fn node_config(
    placement: &Placement<'_>,
    record: &PlacementRecord,
    track: TrackKind,
    template: &ConfigTemplate,
) -> NodeConfig {
    let settings = placement.settings;
    let any = |port: u16| std::net::SocketAddr::from(([0, 0, 0, 0], port));
    NodeConfig {
        node_id: String::new(),
        group: record.group.clone(),
        zone: record.zone.clone(),
        track: track.name().to_owned(),
        listen: any(MCP_PORT),
        admin: any(ADMIN_PORT),
        grpc: any(GRPC_PORT),
        ports_file: None,
        workdir: format!("{DATA_DIR}/node").into(),
        python: settings.python(),
        site_packages: settings.site_packages(),
        pip_args: settings.kubernetes.pip_args.clone(),
        nats_url: settings.nats_url.clone(),
        nats_credentials: settings.node_bus.credentials(&record.group, &record.zone),
        drain_mode: settings.drain_mode,
        drain_timeout: settings.drain_timeout,
        drain_linger: settings.drain_linger,
        blob: settings.blob.clone(),
        snapshot: template.snapshot.clone(),
        policy: PolicyConfig { require_key: true, verbose: template.verbose, ..Default::default() },
        policy_file: Some(format!("{POLICY_DIR}/{POLICY_FILE}").into()),
        env: template.secrets.clone(),
        // The pod is the group's own; the sandbox keeps its code from the node's config and
        // credentials in the pod, and to its ports.
        sandbox: template.sandbox(true),
        ticket_keys: settings.nodes.node_keys(&record.group, &record.zone),
        ..NodeConfig::default()
    }
}

/// The stable track's autoscaler follows the worker count (min = count, max = twice it); a
/// track at zero has none (an autoscaler cannot go below one).
async fn scale_autoscaler(
    placement: &Placement<'_>,
    record: &PlacementRecord,
    track: TrackKind,
    replicas: u32,
) -> Result<(), ProviderError> {
    if track != TrackKind::Worker {
        return Ok(());
    }
    let api = placement.api::<HorizontalPodAutoscaler>();
    if replicas == 0 {
        delete(&api, HPA).await?;
        return Ok(());
    }
    let min = record.worker_count.max(1).min(replicas);
    let max = record.max_workers().max(replicas);
    apply(&api, &manifests::autoscaler(&placement.target, min, max, placement.settings)).await?;
    Ok(())
}

enum Wait {
    Done,
    Stuck,
}

/// Polls the Deployment until it reports the rollout complete, or the deadline.
async fn wait(
    placement: &Placement<'_>,
    name: &str,
    deadline: Instant,
) -> Result<Wait, ProviderError> {
    let api = placement.api::<Deployment>();
    let interval = placement.settings.kubernetes.poll_interval;
    loop {
        match get(&api, name).await {
            Ok(Some(deployment)) if complete(&deployment) => return Ok(Wait::Done),
            Ok(Some(deployment)) if progress_deadline_exceeded(&deployment) => {
                return Ok(Wait::Stuck);
            }
            Ok(_) => {}
            // A blip of the API server while waiting is not the rollout's failure.
            Err(err) if err.is_retryable() => tracing::debug!(%err, "waiting for a rollout"),
            Err(err) => return Err(err),
        }
        if Instant::now() + interval > deadline {
            return Ok(Wait::Stuck);
        }
        tokio::time::sleep(interval.min(Duration::from_secs(5))).await;
    }
}

/// The Deployment controller's own definition of a finished rollout (`kubectl rollout status`).
pub(super) fn complete(deployment: &Deployment) -> bool {
    let want = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(status) = &deployment.status else { return false };
    let generation = deployment.metadata.generation.unwrap_or(0);
    status.observed_generation.unwrap_or(0) >= generation
        && status.updated_replicas.unwrap_or(0) == want
        && status.replicas.unwrap_or(0) == want
        && status.ready_replicas.unwrap_or(0) == want
        && status.available_replicas.unwrap_or(0) == want
}

fn progress_deadline_exceeded(deployment: &Deployment) -> bool {
    let conditions = deployment.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| {
        c.iter().any(|c| {
            c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
        })
    })
}

async fn deployment_reason(api: &kube::Api<Deployment>, name: &str) -> String {
    let Ok(Some(deployment)) = get(api, name).await else {
        return "the Deployment is gone".into();
    };
    let conditions = deployment.status.and_then(|s| s.conditions).unwrap_or_default();
    let text: Vec<String> = conditions
        .iter()
        .filter(|c| c.status != "True" || c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
        .map(|c| format!("{}: {}", c.type_, c.message.clone().unwrap_or_default()))
        .collect();
    if text.is_empty() {
        "the Deployment did not finish rolling out (no pod reported a reason)".into()
    } else {
        text.join("; ")
    }
}

/// The track's pods that are not ready (the ones a stuck rollout is waiting for).
async fn stuck_pods(
    placement: &Placement<'_>,
    track: TrackKind,
) -> Result<Vec<Pod>, ProviderError> {
    let pods =
        list(&placement.api::<Pod>(), &manifests::track_selector(&placement.target, track)).await?;
    Ok(pods
        .into_iter()
        .filter(|p| !pods::is_ready(p) && p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Config Secrets of the track other than the one it runs now and the one before it.
async fn prune_configs(
    placement: &Placement<'_>,
    track: TrackKind,
    now: &str,
    before: Option<&Deployment>,
) -> Result<(), ProviderError> {
    let previous =
        before.and_then(|d| running_spec(d, crate::model::SizeClass::S)).map(|s| s.config_secret);
    let api = placement.api::<Secret>();
    let selector =
        format!("{},{TRACK_LABEL}={}", manifests::selector(&placement.target), track.name());
    for secret in list(&api, &selector).await? {
        let name = secret.metadata.name.clone().unwrap_or_default();
        if name != now && Some(&name) != previous.as_ref() {
            delete(&api, &name).await?;
        }
    }
    Ok(())
}

async fn report(
    placement: &Placement<'_>,
    record: &PlacementRecord,
    plan: &RolloutPlan,
    not_ready: Vec<crate::provider::NotReadyWorker>,
    commit: String,
) -> Result<RolloutReport, ProviderError> {
    let pods =
        list(&placement.api::<Pod>(), &manifests::track_selector(&placement.target, plan.track))
            .await?;
    let workers: Vec<WorkerView> = pods.iter().filter_map(|p| pods::view(p, record.size)).collect();
    Ok(RolloutReport { ready: not_ready.is_empty(), workers, not_ready, commit })
}
