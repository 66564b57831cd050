//! What a placement's cloud resources need from the rest of the zone-manager: the group's
//! service-account rules (from auth) and the group's other placements (for the shared edge
//! rule).

use ramen_proto::auth::v1 as auth;

use super::ZoneManager;
use crate::error::Result;
use crate::model::{PlacementPhase, PlacementRecord, ProviderKind};
use crate::provider::EdgeMember;

impl ZoneManager {
    /// The group's service-account rules for `provider` as grants to a zone's identity. The
    /// local provider applies none, so auth is not asked.
    pub(crate) async fn grants(
        &self,
        group: &str,
        provider: ProviderKind,
    ) -> Result<Vec<ramen_cloud::Grant>> {
        if provider == ProviderKind::Local {
            return Ok(Vec::new());
        }
        let request = auth::GetServiceAccountRulesRequest { group: group.to_owned() };
        let own = crate::events::own_caller();
        let rules = self.auth.get_service_account_rules(&own, request).await?;
        let wanted = crate::api::conversions::provider_to_proto(provider) as i32;
        Ok(rules
            .rules
            .into_iter()
            .filter(|rule| rule.provider == wanted)
            .map(|rule| ramen_cloud::Grant {
                permissions: rule.permissions,
                resources: rule.resources,
            })
            .collect())
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
    /// again, which grants its identity exactly the rules now set. Answers how many.
    pub async fn refresh_identities(&self, group: &str) -> Result<u32> {
        let (placements, _) = self.list_placements(group, "", crate::store::Page::all()).await?;
        let mut refreshed = 0;
        for placement in placements {
            if placement.provider == ProviderKind::Local
                || placement.status == PlacementPhase::TearingDown
            {
                continue;
            }
            self.ensure_placement(&crate::events::own_caller(), group, &placement.zone).await?;
            refreshed += 1;
        }
        Ok(refreshed)
    }
}
