//! Bringing a track to a plan: scale down, restart in place one worker at a time, scale up,
//! wait for ready. The track's config file changes only when every worker became ready on the
//! new config; a worker that does not is put back on the config it ran before, so the track
//! keeps serving what it served.

use std::sync::Arc;

use tokio::time::Instant;

use super::placement::LocalPlacement;
use crate::provider::{
    ConfigTemplate, NotReadyWorker, ProviderError, RolloutPlan, RolloutReport, TemplateChoice,
};

pub(crate) async fn run(
    placement: &Arc<LocalPlacement>,
    plan: RolloutPlan,
) -> Result<RolloutReport, ProviderError> {
    let _op = placement.ops.lock().await;
    let deadline = Instant::now() + plan.timeout;
    let current = placement.track_template(plan.track)?.map(Arc::new);
    let target = match (plan.template, &current) {
        (TemplateChoice::Keep, Some(current)) => Some(current.clone()),
        _ => placement.written()?.map(Arc::new),
    };
    let Some(target) = target else {
        if plan.replicas == 0 {
            scale_down(placement, &plan, 0).await;
            return Ok(report(placement, &plan, Vec::new(), ""));
        }
        return Err(ProviderError::NothingDeployed(format!(
            "{}/{}",
            placement.group, placement.zone
        )));
    };

    scale_down(placement, &plan, plan.replicas).await;
    let mut not_ready = Vec::new();
    if plan.restart_existing {
        not_ready = restart_in_place(placement, &plan, &target, current.as_ref(), deadline).await;
    }
    if not_ready.is_empty() {
        not_ready = scale_up(placement, &plan, &target, deadline).await;
    }
    let ready = not_ready.is_empty();
    let changes_config = current.as_deref() != Some(&*target);
    if ready && plan.replicas > 0 && changes_config {
        placement.save_track_template(plan.track, &target)?;
    }
    let commit =
        if ready { target.commit() } else { current.as_deref().map_or("", |c| c.commit()) };
    Ok(report(placement, &plan, not_ready, commit))
}

/// Removes the highest-numbered workers above `replicas`, draining each.
async fn scale_down(placement: &LocalPlacement, plan: &RolloutPlan, replicas: u32) {
    let workers = placement.track_workers(plan.track);
    for worker in workers.iter().skip(replicas as usize).rev() {
        placement.remove_worker(worker).await;
    }
}

/// One worker at a time, so a track of several keeps serving. Stops at the first failure.
async fn restart_in_place(
    placement: &LocalPlacement,
    plan: &RolloutPlan,
    target: &Arc<ConfigTemplate>,
    previous: Option<&Arc<ConfigTemplate>>,
    deadline: Instant,
) -> Vec<NotReadyWorker> {
    for worker in placement.track_workers(plan.track) {
        let generation = worker.run(target.clone());
        if let Err(not_ready) = worker.wait_ready(generation, deadline, plan.timeout).await {
            if let Some(previous) = previous.filter(|p| *p != target) {
                tracing::warn!(worker = %worker.id, "not ready on the new config; putting it back on the previous one");
                worker.run(previous.clone());
            }
            return vec![not_ready];
        }
    }
    Vec::new()
}

/// Starts the missing workers together, then waits for each.
async fn scale_up(
    placement: &Arc<LocalPlacement>,
    plan: &RolloutPlan,
    target: &Arc<ConfigTemplate>,
    deadline: Instant,
) -> Vec<NotReadyWorker> {
    let running = placement.track_workers(plan.track).len() as u32;
    let started: Vec<_> = (running..plan.replicas)
        .map(|_| placement.add_worker(plan.track, target.clone()))
        .collect();
    let mut not_ready = Vec::new();
    for worker in started {
        if let Err(failure) = worker.wait_ready(worker.generation(), deadline, plan.timeout).await {
            not_ready.push(failure);
        }
    }
    not_ready
}

fn report(
    placement: &LocalPlacement,
    plan: &RolloutPlan,
    not_ready: Vec<NotReadyWorker>,
    commit: &str,
) -> RolloutReport {
    RolloutReport {
        ready: not_ready.is_empty(),
        workers: placement.views(Some(plan.track)),
        not_ready,
        commit: commit.to_owned(),
    }
}
