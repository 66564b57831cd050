//! What the nodes enforce: the config a deploy writes, and the live policy (key hashes, blocked
//! list, disabled packages, IP rules) pushed to running nodes without a restart.

use ramen_proto::common::v1::KeyHash;
use ramen_proto::events::v1::PlacementChange;

use super::ZoneManager;
use crate::error::Result;
use crate::events::Caller;
use crate::model::{PlacementRecord, placement_id};
use crate::provider::ConfigTemplate;
use crate::validate;

/// The live parts of a `WriteConfig` / `UpdateLivePolicy`; `None` keeps the current list.
#[derive(Clone, Debug, Default)]
pub struct LivePolicy {
    pub blocked: Option<Vec<String>>,
    pub key_hashes: Option<Vec<KeyHash>>,
    pub deploy_keys: Option<Vec<KeyHash>>,
    pub auth: Option<ramen_proto::common::v1::McpAuth>,
    /// Whether call records keep arguments (the environment's setting, with each config).
    pub record_arguments: Option<bool>,
}

/// What `SetIpRules` did.
#[derive(Clone, Debug)]
pub struct IpRulesChange {
    pub placement: PlacementRecord,
    pub normalized: Vec<String>,
    pub rolled: bool,
}

impl ZoneManager {
    /// Writes the config the next (re)start loads and pushes its live part at once, with the
    /// keys auth lists for the environment × zone (asked here: the zone-manager is the one
    /// that distributes keys, so a deploy never carries them).
    pub async fn write_config(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        template: ConfigTemplate,
        mut live: LivePolicy,
    ) -> Result<PlacementRecord> {
        check_live(&live)?;
        let own = crate::events::own_caller();
        live.key_hashes =
            Some(self.auth.key_hashes(&own, group, &template.environment, zone).await?);
        let record = self.live_placement(group, zone).await?;
        let provider = self.provider_for(&record)?;
        provider.write_config(&record, &template).await?;
        let commit = template.commit().to_owned();
        let record = self
            .update_placement(group, zone, |p| {
                p.environment = template.environment.clone();
                p.config_commit = commit.clone();
                p.verbose = template.verbose;
                apply_live(p, &live);
                p.policy_version += 1;
                Ok(())
            })
            .await?;
        self.push_policy(&record).await?;
        self.events.placement(&record, PlacementChange::ConfigWritten, caller).await;
        Ok(record)
    }

    /// Replaces the blocked list and/or key hashes and pushes them (key revocation, blocking a
    /// package between deploys).
    pub async fn update_live_policy(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        live: LivePolicy,
    ) -> Result<PlacementRecord> {
        check_live(&live)?;
        self.change_policy(caller, group, zone, PlacementChange::Policy, |p| {
            apply_live(p, &live);
            true
        })
        .await
    }

    /// Disables (or enables again) a package on this zone, live.
    pub async fn set_package_enabled(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        package: &str,
        enabled: bool,
    ) -> Result<PlacementRecord> {
        validate::package(package)?;
        self.change_policy(caller, group, zone, PlacementChange::Packages, |p| {
            let present = p.disabled_packages.iter().any(|d| d == package);
            match (enabled, present) {
                (true, true) => p.disabled_packages.retain(|d| d != package),
                (false, false) => p.disabled_packages.push(package.to_owned()),
                _ => return false,
            }
            true
        })
        .await
    }

    /// Validates and normalises the rules; when they change: new allow-list pushed live, edge
    /// rule installed, workers rolled (so a restarted node comes back with them).
    pub async fn set_ip_rules(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        cidrs: &[String],
    ) -> Result<IpRulesChange> {
        let normalized = validate::cidrs(cidrs)?;
        let lock = self.lock(&placement_id(group, zone));
        let _guard = lock.lock().await;
        let before = self.live_placement(group, zone).await?;
        if before.ip_rules == normalized {
            return Ok(IpRulesChange { placement: before, normalized, rolled: false });
        }
        let record = self
            .change_policy(caller, group, zone, PlacementChange::IpRules, |p| {
                p.ip_rules = normalized.clone();
                true
            })
            .await?;
        self.set_group_edge_rule(&record).await?;
        let rolled = self.roll_running(&record).await?;
        let placement = self.placement(group, zone).await?;
        Ok(IpRulesChange { placement, normalized, rolled })
    }

    /// After `McpKeyChanged`: asks auth for the keys valid for each affected placement and
    /// pushes them, so a revoked key stops working without a redeploy.
    pub async fn refresh_key_hashes(
        &self,
        group: &str,
        zones: &[String],
        environments: &[String],
    ) -> Result<u32> {
        let (placements, _) = self.list_placements(group, "", crate::store::Page::all()).await?;
        let mut pushed = 0;
        for placement in placements {
            let in_scope = (zones.is_empty() || zones.contains(&placement.zone))
                && (environments.is_empty() || environments.contains(&placement.environment));
            let configured = !placement.config_commit.is_empty();
            if !in_scope
                || !configured
                || placement.status == crate::model::PlacementPhase::TearingDown
            {
                continue;
            }
            let own = crate::events::own_caller();
            let keys =
                self.auth.key_hashes(&own, group, &placement.environment, &placement.zone).await?;
            let live = LivePolicy { key_hashes: Some(keys), ..LivePolicy::default() };
            self.update_live_policy(&crate::events::own_caller(), group, &placement.zone, live)
                .await?;
            pushed += 1;
        }
        Ok(pushed)
    }

    /// Applies `change` (which says whether it changed anything), bumps the policy version,
    /// pushes it to the nodes and publishes `PlacementChanged`.
    async fn change_policy<F>(
        &self,
        caller: &Caller,
        group: &str,
        zone: &str,
        kind: PlacementChange,
        mut change: F,
    ) -> Result<PlacementRecord>
    where
        F: FnMut(&mut PlacementRecord) -> bool + Send,
    {
        let record = self
            .update_placement(group, zone, |p| {
                if change(p) {
                    p.policy_version += 1;
                }
                Ok(())
            })
            .await?;
        self.push_policy(&record).await?;
        self.events.placement(&record, kind, caller).await;
        Ok(record)
    }

    async fn push_policy(&self, record: &PlacementRecord) -> Result<()> {
        let outcome = self.provider_for(record)?.apply_policy(record).await?;
        for (worker, reason) in &outcome.failed {
            // It gets the policy from its config when it restarts, or from its supervisor once
            // it is ready again.
            tracing::warn!(placement = %record.label(), %worker, %reason, "live policy not pushed");
        }
        Ok(())
    }
}

fn check_live(live: &LivePolicy) -> Result<()> {
    for key in live.key_hashes.iter().flatten().chain(live.deploy_keys.iter().flatten()) {
        validate::key_hash(&key.sha256_hex)?;
    }
    for name in live.blocked.iter().flatten() {
        if name.trim().is_empty() {
            return Err(crate::error::Error::invalid("blocked", "an entry is empty"));
        }
    }
    Ok(())
}

fn apply_live(placement: &mut PlacementRecord, live: &LivePolicy) {
    if let Some(blocked) = &live.blocked {
        placement.blocked = blocked.iter().map(|b| b.trim().to_owned()).collect();
    }
    let normalised = |keys: &[KeyHash]| -> Vec<KeyHash> {
        keys.iter()
            .map(|k| KeyHash { sha256_hex: k.sha256_hex.to_ascii_lowercase(), ..k.clone() })
            .collect()
    };
    if let Some(keys) = &live.key_hashes {
        placement.key_hashes = normalised(keys);
    }
    if let Some(keys) = &live.deploy_keys {
        placement.deploy_keys = normalised(keys);
    }
    if let Some(auth) = &live.auth {
        placement.auth = Some(auth.clone());
    }
    if let Some(record_arguments) = live.record_arguments {
        placement.record_arguments = record_arguments;
    }
}
