//! The live policy of a placement's nodes: written into each node config at start, and pushed
//! to running nodes with `RunnerService.UpdatePolicy` when it changes.

use std::time::Duration;

use futures::future::join_all;
use ramen_proto::common::v1::NodePolicy;

use ramen_node_contract::PolicyConfig;

use super::placement::LocalPlacement;
use super::settings::{LocalSettings, NodeAdmin};
use crate::model::{PlacementRecord, WorkerPhase, now_ms};
use crate::provider::PolicyPush;

const PUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// The policy section of a node config.
pub(crate) fn policy_config(
    record: &PlacementRecord,
    settings: &LocalSettings,
    verbose: bool,
) -> PolicyConfig {
    let policy = node_policy(record, settings);
    PolicyConfig {
        version: policy.version,
        require_key: true,
        key_hashes: policy.key_hashes.into_iter().map(|k| k.sha256_hex).collect(),
        ip_allow: policy.ip_allow,
        trusted_proxies: policy.trusted_proxies,
        blocked: policy.blocked,
        disabled_packages: policy.disabled_packages,
        allowed_origins: Vec::new(),
        verbose,
    }
}

/// The live policy as `UpdatePolicy` carries it. Keys already expired are left out.
pub(crate) fn node_policy(record: &PlacementRecord, settings: &LocalSettings) -> NodePolicy {
    let now = now_ms();
    NodePolicy {
        version: record.policy_version,
        blocked: record.blocked.clone(),
        disabled_packages: record.disabled_packages.clone(),
        key_hashes: record
            .key_hashes
            .iter()
            .chain(&record.deploy_keys)
            .filter(|k| k.expires_at_unix_ms == 0 || k.expires_at_unix_ms > now)
            .cloned()
            .collect(),
        ip_allow: record.ip_rules.clone(),
        trusted_proxies: settings.trusted_proxies.clone(),
    }
}

/// Pushes the placement's current policy to every worker that has an admin port up. A worker
/// that misses it (starting, or restarting) gets it from its config file or, once ready, from
/// its supervisor.
pub(crate) async fn push(placement: &LocalPlacement, settings: &LocalSettings) -> PolicyPush {
    let policy = node_policy(&placement.record(), settings);
    let targets: Vec<(String, String)> = placement
        .all_workers()
        .iter()
        .map(|w| (w.id.clone(), w.status()))
        .filter(|(_, s)| !s.grpc.is_empty() && s.phase != WorkerPhase::Exited)
        .map(|(id, s)| (id, s.grpc))
        .collect();
    let pushes = targets.iter().map(|(_, grpc)| push_one(&settings.nodes, grpc, policy.clone()));
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

/// One `UpdatePolicy` call. An older version than the node's is ignored by the node, which is
/// what a reordered push should do.
pub(crate) async fn push_one(
    nodes: &NodeAdmin,
    grpc: &str,
    policy: NodePolicy,
) -> Result<(), String> {
    let own = crate::events::own_caller();
    let call = nodes.0.update_policy(&own, grpc, policy);
    match tokio::time::timeout(PUSH_TIMEOUT, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(err.message),
        Err(_) => Err("timed out".into()),
    }
}
