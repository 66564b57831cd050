//! The zone's cloud resources (`ramen-cloud`) as the provider's steps drive them: identity and
//! route with `ensure`, the registered targets after every rollout, the group's edge rule, and
//! their removal in the teardown steps of the same names.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use ramen_cloud::{CloudError, EdgeRule, Grants, Outcome, PlacementRef, ZoneCloud};
use ramen_config::ClusterConfig;

use super::manifests::WORKER_SERVICE_ACCOUNT;
use super::settings::{KubeSettings, MCP_PORT};
use super::{Placement, pods};
use crate::model::{ProviderKind, SizeClass};
use crate::provider::{EdgeMember, ProviderError, StepOutcome, WorkerView};

pub(super) fn error(err: CloudError) -> ProviderError {
    match err {
        CloudError::Unavailable(message) => ProviderError::Unavailable(message),
        other => ProviderError::Failed(other.to_string()),
    }
}

fn reference<'a>(placement: &'a Placement<'a>, cluster: &'a ClusterConfig) -> PlacementRef<'a> {
    PlacementRef {
        group: placement.target.group,
        zone: placement.target.zone,
        namespace: placement.target.namespace,
        location: placement.target.region,
        service_account: WORKER_SERVICE_ACCOUNT,
        cluster,
        port: MCP_PORT,
    }
}

/// Identity, then route; answers the resources in place.
pub(super) async fn ensure(
    cloud: &dyn ZoneCloud,
    placement: &Placement<'_>,
    cluster: &ClusterConfig,
    grants: &Grants,
) -> Result<Vec<String>, ProviderError> {
    let placement_ref = reference(placement, cluster);
    let identity = cloud
        .ensure_identity(&placement_ref, &grants.rules, &grants.bounds)
        .await
        .map_err(error)?;
    let route = cloud.ensure_route(&placement_ref).await.map_err(error)?;
    tracing::info!(
        group = placement.target.group,
        zone = placement.target.zone,
        identity = %identity.note,
        route = %route.note,
        "cloud resources in place"
    );
    Ok(identity.resources.into_iter().chain(route.resources).collect())
}

/// Registers exactly the pods that serve: the ready stable workers, or the ready canaries
/// while stable has none (as the local edge routes).
pub(super) async fn sync_targets(
    cloud: &dyn ZoneCloud,
    placement: &Placement<'_>,
    cluster: &ClusterConfig,
) -> Result<(), ProviderError> {
    let views: Vec<WorkerView> = placement
        .worker_pods()
        .await?
        .iter()
        .filter_map(|pod| pods::view(pod, SizeClass::S))
        .collect();
    let ips = serving_ips(&views);
    let made = cloud.sync_targets(&reference(placement, cluster), &ips).await.map_err(error)?;
    tracing::debug!(group = placement.target.group, zone = placement.target.zone, note = %made.note, "targets synced");
    Ok(())
}

fn serving_ips(views: &[WorkerView]) -> Vec<IpAddr> {
    crate::provider::serving(views)
        .iter()
        .filter_map(|v| v.mcp_address.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .collect()
}

/// Takes every target out before the workers drain, so the load balancer stops sending new
/// requests to pods that are about to refuse them.
pub(super) async fn deregister_all(
    cloud: &dyn ZoneCloud,
    placement: &Placement<'_>,
    cluster: &ClusterConfig,
) -> Result<(), ProviderError> {
    match cloud.sync_targets(&reference(placement, cluster), &[]).await {
        Ok(_) => Ok(()),
        // No target group (never made, or already gone): nothing registered.
        Err(CloudError::Unavailable(message)) if message.contains("does not exist") => Ok(()),
        Err(err) => Err(error(err)),
    }
}

/// The group's edge rule behind `cluster`'s edge, from every member there: one rule per
/// group, so it lets through what any of the group's zones allows. A zone with no list
/// allows everyone, so then the edge does too (the node's own list stays its own). The
/// edge is the web ACL of a region on AWS, the project's (global) Cloud Armor on GCP.
pub(super) fn edge_rule(
    settings: &KubeSettings,
    kind: ProviderKind,
    cluster: &ClusterConfig,
    members: &[EdgeMember],
) -> Result<(EdgeRuleKind, Vec<IpNet>), ProviderError> {
    let behind_same_edge: Vec<&EdgeMember> = members
        .iter()
        .filter(|m| {
            settings.cluster(kind, &m.zone, &m.region).is_ok_and(|(_, c)| match kind {
                ProviderKind::Gcp => c.project == cluster.project && !c.url_map.is_empty(),
                _ => c.region == cluster.region && c.web_acl_arn == cluster.web_acl_arn,
            })
        })
        .collect();
    if behind_same_edge.is_empty() {
        return Ok((EdgeRuleKind::Remove, Vec::new()));
    }
    if behind_same_edge.iter().any(|m| m.ip_rules.is_empty()) {
        return Ok((EdgeRuleKind::Everyone, Vec::new()));
    }
    let mut union = BTreeSet::new();
    for member in behind_same_edge {
        for cidr in &member.ip_rules {
            let net: IpNet = cidr.parse().map_err(|_| {
                ProviderError::Failed(format!(
                    "zone {} has IP rule {cidr:?}, not a CIDR",
                    member.zone
                ))
            })?;
            union.insert(net);
        }
    }
    Ok((EdgeRuleKind::Only, IpNet::aggregate(&union.into_iter().collect())))
}

/// [`EdgeRule`] without the borrow, so the networks can live beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EdgeRuleKind {
    Only,
    Everyone,
    Remove,
}

pub(super) async fn set_edge_rule(
    cloud: &dyn ZoneCloud,
    group: &str,
    cluster: &ClusterConfig,
    (kind, nets): (EdgeRuleKind, Vec<IpNet>),
) -> Result<String, ProviderError> {
    let rule = match kind {
        EdgeRuleKind::Only => EdgeRule::Only(&nets),
        EdgeRuleKind::Everyone => EdgeRule::Everyone,
        EdgeRuleKind::Remove => EdgeRule::Remove,
    };
    Ok(cloud.set_edge_rule(group, cluster, rule).await.map_err(error)?.note)
}

pub(super) async fn remove_route(
    cloud: &dyn ZoneCloud,
    placement: &Placement<'_>,
    cluster: &ClusterConfig,
) -> Result<Outcome, ProviderError> {
    cloud.remove_route(&reference(placement, cluster)).await.map_err(error)
}

pub(super) async fn remove_identity(
    cloud: &dyn ZoneCloud,
    placement: &Placement<'_>,
    cluster: &ClusterConfig,
) -> Result<Outcome, ProviderError> {
    cloud.remove_identity(&reference(placement, cluster)).await.map_err(error)
}

/// A cloud step's outcome before the cluster's part of the same step: waiting wins, notes join.
pub(super) fn then(cloud: Outcome, cluster: StepOutcome) -> StepOutcome {
    match (cloud, cluster) {
        (Outcome::Waiting(why), _) => StepOutcome::Waiting(why),
        (Outcome::Done(a), StepOutcome::Done(b)) => StepOutcome::Done(format!("{a}; {b}")),
        (Outcome::Done(_), waiting) => waiting,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TrackKind, WorkerPhase};

    fn view(track: TrackKind, ip: &str, state: WorkerPhase) -> WorkerView {
        WorkerView {
            state,
            mcp_address: format!("{ip}:8000"),
            ..crate::events::publish::gone(ip, track)
        }
    }

    #[test]
    fn ready_stable_workers_serve_and_canaries_only_without_them() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let mut views = vec![
            view(TrackKind::Worker, "10.0.0.1", WorkerPhase::Ready),
            view(TrackKind::Worker, "10.0.0.2", WorkerPhase::Starting),
            view(TrackKind::Canary, "10.0.0.3", WorkerPhase::Ready),
        ];
        assert_eq!(serving_ips(&views), [ip("10.0.0.1")]);
        views[0].state = WorkerPhase::Draining;
        assert_eq!(serving_ips(&views), [ip("10.0.0.3")]);
    }
}
