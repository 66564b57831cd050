//! A placement's live policy as its nodes take it, whatever runs them: written into each node
//! config (or a policy file) at start, and pushed to running nodes with
//! `RunnerService.UpdatePolicy` when it changes.

use std::time::Duration;

use ramen_node_contract::PolicyConfig;
use ramen_proto::common::v1::NodePolicy;

use crate::model::{PlacementRecord, now_ms};

const PUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// The policy section of a node config.
pub fn policy_config(
    record: &PlacementRecord,
    trusted_proxies: &[String],
    verbose: bool,
) -> PolicyConfig {
    let policy = node_policy(record, trusted_proxies);
    PolicyConfig {
        version: policy.version,
        require_key: true,
        key_hashes: policy
            .key_hashes
            .into_iter()
            .map(|k| ramen_node_contract::NodeKey::new(k.sha256_hex, k.expires_at_unix_ms))
            .collect(),
        ip_allow: policy.ip_allow,
        trusted_proxies: policy.trusted_proxies,
        blocked: policy.blocked,
        disabled_packages: policy.disabled_packages,
        allowed_origins: Vec::new(),
        verbose,
    }
}

/// The live policy as `UpdatePolicy` carries it. Keys already expired are left out.
pub fn node_policy(record: &PlacementRecord, trusted_proxies: &[String]) -> NodePolicy {
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
        trusted_proxies: trusted_proxies.to_vec(),
    }
}

/// One `UpdatePolicy` call to the node at `grpc` of `record`'s placement. An older version
/// than the node's is ignored by the node, which is what a reordered push should do.
pub async fn push_one(
    nodes: &dyn ramen_clients::NodeClient,
    record: &PlacementRecord,
    grpc: &str,
    policy: NodePolicy,
) -> Result<(), String> {
    let own = crate::events::own_caller();
    let node =
        ramen_clients::NodeTarget { group: &record.group, zone: &record.zone, address: grpc };
    let call = nodes.update_policy(&own, node, policy);
    match tokio::time::timeout(PUSH_TIMEOUT, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(err.message),
        Err(_) => Err("timed out".into()),
    }
}
