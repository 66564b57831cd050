//! A placement's teardown in the order the saga runs it: workers (autoscaler, Deployments, and
//! a wait until their pods are gone), route (Services), identity (ServiceAccount), then the
//! rest and the namespace itself, reported as waiting while it sits in `Terminating` with what
//! still holds it. Only objects carrying the placement's labels are deleted; every step can run
//! again after a crash.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;

use super::Placement;
use super::manifests::{self, HPA, NETWORK_POLICY, WORKER_SERVICE_ACCOUNT};
use super::objects::{DeleteOutcome, delete, delete_ours, get, is_ours, list};
use super::pods;
use crate::model::TrackKind;
use crate::provider::{ProviderError, StepOutcome, TeardownAction};

pub(super) async fn step(
    placement: &Placement<'_>,
    step: TeardownAction,
) -> Result<StepOutcome, ProviderError> {
    let target = &placement.target;
    let namespaces: Api<Namespace> = Api::all(placement.client.clone());
    let namespace = get(&namespaces, target.namespace).await?;
    // Nothing left, or never ramen's: no step has anything to do in it.
    match &namespace {
        None => return Ok(StepOutcome::Done(format!("namespace {} is gone", target.namespace))),
        Some(ns) if !is_ours(ns, target) => {
            return Ok(StepOutcome::Done(format!(
                "namespace {} was not made by ramen for this placement; left alone",
                target.namespace
            )));
        }
        Some(_) => {}
    }
    match step {
        TeardownAction::DrainWorkers => drain(placement).await,
        TeardownAction::RemoveRoute => {
            let mut removed = Vec::new();
            for track in TrackKind::BOTH {
                if delete_ours(&placement.api::<Service>(), track.name(), target).await?
                    == DeleteOutcome::Deleted
                {
                    removed.push(track.name());
                }
            }
            Ok(StepOutcome::Done(format!("Services removed: [{}]", removed.join(", "))))
        }
        TeardownAction::RemoveEdgeRule => Ok(StepOutcome::Done(
            "the node allow-list went with the workers; the cloud edge rule is the zone's cloud resources'"
                .into(),
        )),
        TeardownAction::RemoveIdentity => {
            let outcome =
                delete_ours(&placement.api::<ServiceAccount>(), WORKER_SERVICE_ACCOUNT, target).await?;
            Ok(StepOutcome::Done(format!("ServiceAccount {WORKER_SERVICE_ACCOUNT}: {outcome:?}")))
        }
        TeardownAction::RemoveNamespace => remove_namespace(placement, &namespaces, namespace).await,
    }
}

/// Autoscaler first (it would scale the Deployment back up), then the Deployments; waits until
/// their pods have drained and stopped.
async fn drain(placement: &Placement<'_>) -> Result<StepOutcome, ProviderError> {
    let target = &placement.target;
    delete_ours(&placement.api::<HorizontalPodAutoscaler>(), HPA, target).await?;
    for track in TrackKind::BOTH {
        delete_ours(&placement.api::<Deployment>(), track.name(), target).await?;
    }
    let left = placement.worker_pods().await?;
    if left.is_empty() {
        return Ok(StepOutcome::Done("Deployments removed; no worker pod left".into()));
    }
    let names: Vec<String> = left.iter().map(pods::name).collect();
    Ok(StepOutcome::Waiting(format!(
        "{} worker pod(s) still stopping: {}",
        names.len(),
        names.join(", ")
    )))
}

async fn remove_namespace(
    placement: &Placement<'_>,
    namespaces: &Api<Namespace>,
    namespace: Option<Namespace>,
) -> Result<StepOutcome, ProviderError> {
    let target = &placement.target;
    let Some(namespace) = namespace else {
        return Ok(StepOutcome::Done(format!("namespace {} is gone", target.namespace)));
    };
    if namespace.metadata.deletion_timestamp.is_some() {
        return Ok(StepOutcome::Waiting(terminating(&namespace)));
    }
    // Everything ramen put in it, so nothing depends on the namespace controller's sweep.
    let secrets = placement.api::<Secret>();
    for secret in list(&secrets, &manifests::selector(target)).await? {
        delete(&secrets, &secret.metadata.name.unwrap_or_default()).await?;
    }
    for track in TrackKind::BOTH {
        delete_ours(&placement.api::<PodDisruptionBudget>(), track.name(), target).await?;
    }
    delete_ours(&placement.api::<NetworkPolicy>(), NETWORK_POLICY, target).await?;
    let pods = placement.api::<Pod>();
    for builder in list(&pods, &manifests::selector(target)).await? {
        delete(&pods, &builder.metadata.name.unwrap_or_default()).await?;
    }
    delete(namespaces, target.namespace).await?;
    match get(namespaces, target.namespace).await? {
        None => Ok(StepOutcome::Done(format!("namespace {} deleted", target.namespace))),
        Some(ns) => Ok(StepOutcome::Waiting(terminating(&ns))),
    }
}

/// What a namespace in `Terminating` is waiting for: its conditions and finalizers.
fn terminating(namespace: &Namespace) -> String {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    let mut parts = Vec::new();
    let status = namespace.status.as_ref();
    for condition in status.and_then(|s| s.conditions.as_ref()).into_iter().flatten() {
        if condition.status == "True" {
            let message = condition.message.clone().unwrap_or_default();
            parts.push(format!("{}: {message}", condition.type_));
        }
    }
    let finalizers: Vec<String> = namespace
        .metadata
        .finalizers
        .iter()
        .flatten()
        .chain(namespace.spec.as_ref().and_then(|s| s.finalizers.as_ref()).into_iter().flatten())
        .cloned()
        .collect();
    if !finalizers.is_empty() {
        parts.push(format!("finalizers [{}]", finalizers.join(", ")));
    }
    let since = namespace
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| format!(" since {}", t.0))
        .unwrap_or_default();
    let detail = if parts.is_empty() { String::new() } else { format!(": {}", parts.join("; ")) };
    format!("namespace {name} Terminating{since}{detail}")
}
