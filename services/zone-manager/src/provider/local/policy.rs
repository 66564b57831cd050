//! Pushing a placement's live policy to its local workers (the policy itself:
//! [`crate::provider::policy`]).

use futures::future::join_all;

use super::placement::LocalPlacement;
use super::settings::LocalSettings;
use crate::model::WorkerPhase;
use crate::provider::PolicyPush;
use crate::provider::policy::{node_policy, push_one};

/// Pushes the placement's current policy to every worker that has an admin port up. A worker
/// that misses it (starting, or restarting) gets it from its config file or, once ready, from
/// its supervisor.
pub(crate) async fn push(placement: &LocalPlacement, settings: &LocalSettings) -> PolicyPush {
    let record = placement.record();
    let policy = node_policy(&record, &settings.trusted_proxies);
    let targets: Vec<(String, String)> = placement
        .all_workers()
        .iter()
        .map(|w| (w.id.clone(), w.status()))
        .filter(|(_, s)| !s.grpc.is_empty() && s.phase != WorkerPhase::Exited)
        .map(|(id, s)| (id, s.grpc))
        .collect();
    let pushes = targets
        .iter()
        .map(|(_, grpc)| push_one(&*settings.nodes.client, &record, grpc, policy.clone()));
    let results = join_all(pushes).await;
    let mut outcome = PolicyPush::default();
    for ((id, _), result) in targets.into_iter().zip(results) {
        match result {
            Ok(()) => outcome.pushed += 1,
            Err(reason) => outcome.failed.push((id, reason)),
        }
    }
    outcome
}
