//! What a placement's cloud resources need from the rest of the zone-manager: the group's
//! service-account rules (from auth) and the group's other placements (for the shared edge
//! rule).

use std::sync::Arc;

use ramen_proto::auth::v1 as auth;
use ramen_store::Query;

use super::ZoneManager;
use crate::error::Result;
use crate::model::{PlacementPhase, PlacementRecord, ProviderKind, placement_id};
use crate::provider::EdgeMember;

impl ZoneManager {
    /// The group's service-account rules for `provider` as grants to a zone's identity, with
    /// the bounds in force (the cloud refuses rules outside them). The local provider applies
    /// none, so auth is not asked.
    pub(crate) async fn grants(
        &self,
        group: &str,
        provider: ProviderKind,
    ) -> Result<ramen_cloud::Grants> {
        let bounded = match provider {
            ProviderKind::Local => return Ok(ramen_cloud::Grants::none()),
            ProviderKind::Aws => ramen_grant_bounds::Provider::Aws,
            ProviderKind::Gcp => ramen_grant_bounds::Provider::Gcp,
        };
        let request = auth::GetServiceAccountRulesRequest { group: group.to_owned() };
        let own = crate::events::own_caller();
        let answer = self.auth.get_service_account_rules(&own, request).await?;
        // An auth without bounds (older) answers none: the defaults hold.
        let bounds = answer.bounds.map_or_else(ramen_grant_bounds::Bounds::default, |b| {
            ramen_grant_bounds::Bounds::from_pb(b.aws, b.gcp)
        });
        let wanted = crate::api::conversions::provider_to_proto(provider) as i32;
        let rules = answer
            .rules
            .into_iter()
            .filter(|rule| rule.provider == wanted)
            .map(|rule| ramen_cloud::Grant {
                permissions: rule.permissions,
                resources: rule.resources,
            })
            .collect();
        Ok(ramen_cloud::Grants { rules, bounds: bounds.of(bounded).clone() })
    }

    /// The group's live placements on `provider` (not being torn down), but `except`.
    pub(crate) async fn edge_members(
        &self,
        group: &str,
        provider: ProviderKind,
        except: Option<&str>,
    ) -> Result<Vec<EdgeMember>> {
        let (placements, _) = self.list_placements(group, "", crate::store::Page::all()).await?;
        Ok(placements
            .into_iter()
            .filter(|p| p.provider == provider && p.status != PlacementPhase::TearingDown)
            .filter(|p| except != Some(p.zone.as_str()))
            .map(|p| EdgeMember { zone: p.zone, region: p.region, ip_rules: p.ip_rules })
            .collect())
    }

    /// Sets the group's edge rule from every live placement of `record`'s provider.
    pub(crate) async fn set_group_edge_rule(&self, record: &PlacementRecord) -> Result<()> {
        let members = self.edge_members(&record.group, record.provider, None).await?;
        self.provider_for(record)?.set_edge_rule(record, &members).await?;
        Ok(())
    }

    /// After `ServiceAccountRulesChanged`: ensures each of the group's live cloud placements
    /// again, which grants its identity exactly the rules now set. Answers how many. One
    /// placement refused for good (its zone being deleted) does not stop the others; the first
    /// retryable failure is answered after trying them all, so the event is delivered again.
    pub async fn refresh_identities(&self, group: &str) -> Result<u32> {
        let (placements, _) = self.list_placements(group, "", crate::store::Page::all()).await?;
        let (mut refreshed, mut retry) = (0, None);
        for placement in placements {
            if placement.provider == ProviderKind::Local
                || placement.status == PlacementPhase::TearingDown
            {
                continue;
            }
            let own = crate::events::own_caller();
            match self.ensure_placement(&own, group, &placement.zone).await {
                Ok(_) => refreshed += 1,
                Err(err) if err.is_retryable() => {
                    tracing::warn!(%err, group, zone = %placement.zone, "identity not refreshed; the event will be retried");
                    retry.get_or_insert(err);
                }
                Err(err) => {
                    tracing::warn!(%err, group, zone = %placement.zone, "identity not refreshed")
                }
            }
        }
        match retry {
            Some(err) => Err(err),
            None => Ok(refreshed),
        }
    }

    /// A task (`zone-route-sync`) re-syncing every cloud placement's route each
    /// `route_sync_interval`, so a pod the cluster replaced outside a rollout (a drained
    /// node, an evicted pod) is registered within one interval, not at the next deploy.
    pub(crate) fn spawn_route_sync(self: &Arc<Self>) {
        let interval = self.settings.route_sync_interval;
        if interval.is_zero() {
            return;
        }
        let manager = self.clone();
        self.tasks.spawn("zone-route-sync", move |token| async move {
            loop {
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                }
                if let Err(err) = manager.sync_routes().await {
                    tracing::warn!(%err, "route sync failed; trying again next interval");
                }
            }
        });
    }

    /// Re-syncs the route of each live cloud placement that has one; answers how many. A
    /// placement in a rollout or teardown is skipped (the rollout syncs at its end).
    pub async fn sync_routes(&self) -> Result<u32> {
        let placements = self.db.placements.find(&Query::new()).await?;
        let mut synced = 0;
        for placement in placements.into_iter().map(|p| p.value) {
            if placement.provider == ProviderKind::Local
                || placement.status == PlacementPhase::TearingDown
                || placement.cloud_resources.is_empty()
            {
                continue;
            }
            let lock = self.lock(&placement_id(&placement.group, &placement.zone));
            let Ok(_guard) = lock.try_lock() else { continue };
            match self.provider_for(&placement)?.sync_route(&placement).await {
                Ok(()) => synced += 1,
                Err(err) => {
                    tracing::warn!(%err, group = %placement.group, zone = %placement.zone, "route not synced")
                }
            }
        }
        Ok(synced)
    }
}
