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
        key_hashes: policy.key_hashes.into_iter().map(Into::into).collect(),
        ip_allow: policy.ip_allow,
        trusted_proxies: policy.trusted_proxies,
        blocked: policy.blocked,
        disabled_packages: policy.disabled_packages,
        allowed_origins: Vec::new(),
        verbose,
        auth: ramen_node_contract::NodeAuth::from_wire(policy.auth.as_ref()),
        environment: policy.environment,
        record_arguments: policy.record_arguments,
    }
}

/// The live policy as `UpdatePolicy` carries it. Keys already expired are left out, and so
/// are auth's keys on an environment that takes OAuth tokens only (its deploy's smoke key
/// still counts: the deployer's smoke step is the control plane's, not a client's).
pub fn node_policy(record: &PlacementRecord, trusted_proxies: &[String]) -> NodePolicy {
    use ramen_proto::common::v1::McpAuthMode;
    let now = now_ms();
    let oauth_only = record.auth.as_ref().is_some_and(|a| a.mode() == McpAuthMode::Oauth);
    let clients_keys: &[_] = if oauth_only { &[] } else { &record.key_hashes };
    NodePolicy {
        version: record.policy_version,
        blocked: record.blocked.clone(),
        disabled_packages: record.disabled_packages.clone(),
        key_hashes: clients_keys
            .iter()
            .chain(&record.deploy_keys)
            .filter(|k| k.expires_at_unix_ms == 0 || k.expires_at_unix_ms > now)
            .cloned()
            .collect(),
        ip_allow: record.ip_rules.clone(),
        trusted_proxies: trusted_proxies.to_vec(),
        auth: record.auth.clone(),
        environment: record.environment.clone(),
        record_arguments: record.record_arguments,
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

#[cfg(test)]
mod tests {
    use ramen_proto::common::v1::{KeyHash, McpAuth, McpAuthMode};

    use super::*;

    #[test]
    fn an_oauth_only_environment_gets_no_client_keys_but_keeps_the_deploys() {
        let key = |id: &str| KeyHash {
            key_id: id.into(),
            sha256_hex: "ab".repeat(32),
            ..Default::default()
        };
        let mut record = PlacementRecord {
            key_hashes: vec![key("client")],
            deploy_keys: vec![key("smoke")],
            ..PlacementRecord::default()
        };
        let ids = |record: &PlacementRecord| -> Vec<String> {
            node_policy(record, &[]).key_hashes.into_iter().map(|k| k.key_id).collect()
        };
        assert_eq!(ids(&record), ["client", "smoke"], "keys by default");
        for (mode, expected) in [
            (McpAuthMode::Both, vec!["client", "smoke"]),
            (McpAuthMode::Keys, vec!["client", "smoke"]),
            (McpAuthMode::Oauth, vec!["smoke"]),
        ] {
            record.auth = Some(McpAuth { mode: mode as i32, ..Default::default() });
            assert_eq!(ids(&record), expected, "{mode:?}");
        }
        let config = policy_config(&record, &[], false);
        assert_eq!(config.auth.mode, ramen_call_rules::AuthMode::Oauth);
    }
}
