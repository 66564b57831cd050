//! Service-account rules per group: the grants the group's zone identity (GCP service account,
//! AWS IAM role) receives. Stored here, applied by the zone providers. Every rule stays inside
//! the bounds a super admin sets (`ramen_grant_bounds`): checked here when set, and by the
//! zone-manager again before it applies them.

use ramen_proto::auth::v1::Action;
use ramen_proto::events::v1::ServiceAccountRulesChanged;
use ramen_store::{StoreError, Versioned};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{BOUNDS_ID, BoundsRecord, RuleRecord, ServiceAccountRecord, now_ms};
use crate::{Auth, validate};
use ramen_access::Caller;
use ramen_grant_bounds::{Bounds, Provider};

pub const MAX_RULES: usize = 100;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

fn check(rules: &[RuleRecord], bounds: &Bounds) -> Result<(), AuthError> {
    if rules.len() > MAX_RULES {
        return Err(AuthError::invalid("rules", format!("at most {MAX_RULES} rules")));
    }
    for (i, rule) in rules.iter().enumerate() {
        if rule.permissions.is_empty() {
            return Err(AuthError::invalid(
                "rules",
                format!("rule {i}: needs at least one permission"),
            ));
        }
        // The API document's rule for both ([`ramen_service::rules::CLOUD_PATTERN`]).
        let fields = rule.permissions.iter().chain(&rule.resources);
        if let Some(bad) =
            fields.into_iter().find(|v| !ramen_service::rules::CLOUD_PATTERN.accepts(v))
        {
            return Err(AuthError::invalid(
                "rules",
                format!("rule {i}: `{bad}` is not a permission or resource name"),
            ));
        }
        if rule.description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(AuthError::invalid(
                "rules",
                format!("rule {i}: description is over {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
    }
    // Only once every rule is well formed, so a refusal here is about the bounds alone.
    for (i, rule) in rules.iter().enumerate() {
        if let Some(provider) = Provider::from_pb(rule.provider) {
            ramen_grant_bounds::check(
                bounds.of(provider),
                provider,
                i,
                &rule.permissions,
                &rule.resources,
            )
            .map_err(|refused| {
                AuthError::Denied(format!(
                    "{refused}; a super admin sets the bounds (Config page, PUT /api/service-account-bounds)"
                ))
            })?;
        }
    }
    Ok(())
}

impl Auth {
    /// The rules and their version (0 and empty when never set).
    pub async fn get_service_account(
        &self,
        caller: &Caller,
        group: &str,
    ) -> Result<Versioned<ServiceAccountRecord>, AuthError> {
        validate::group(group)?;
        self.require(caller, group, Action::ReadGroup).await?;
        let empty = || Versioned {
            id: group.to_owned(),
            version: 0,
            value: ServiceAccountRecord {
                rules: Vec::new(),
                updated_at_ms: 0,
                updated_by: String::new(),
            },
        };
        Ok(self.db.service_accounts.get(group).await?.unwrap_or_else(empty))
    }

    /// Replaces the rules; `expected_version` 0 = unconditional, else CONFLICT when stale.
    pub async fn set_service_account(
        &self,
        caller: &Caller,
        group: &str,
        rules: Vec<RuleRecord>,
        expected_version: u64,
    ) -> Result<Versioned<ServiceAccountRecord>, AuthError> {
        let extra = details([("rules", rules.len().to_string())]);
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageServiceAccount).await?;
            check(&rules, &self.service_account_bounds().await?.value.bounds)?;
            let record = ServiceAccountRecord { rules, updated_at_ms: now_ms(), updated_by: caller.audit_actor().to_owned() };
            if expected_version == 0 {
                let version = self.db.service_accounts.put(group, &record).await?;
                let written = Versioned { id: group.to_owned(), version, value: record };
                self.publish_rules_change(caller, group, written.version).await;
                return Ok(written);
            }
            let current = Versioned { id: group.to_owned(), version: expected_version, value: record };
            match self.db.service_accounts.update(current).await {
                Ok(written) => {
                    self.publish_rules_change(caller, group, written.version).await;
                    Ok(written)
                }
                Err(StoreError::VersionConflict { actual, .. }) => Err(AuthError::Conflict(format!(
                    "service-account rules are at version {actual}, not {expected_version}; re-read and retry"
                ))),
                Err(StoreError::NotFound { .. }) => Err(AuthError::Conflict(format!(
                    "service-account rules were never set; expected version {expected_version} does not exist"
                ))),
                Err(e) => Err(e.into()),
            }
        }
        .await;
        self.audited(caller, "service_account.set", group, &format!("group/{group}"), extra, result)
            .await
    }

    /// The bounds in force: the stored ones, or the defaults (version 0) when never set.
    pub async fn service_account_bounds(&self) -> Result<Versioned<BoundsRecord>, AuthError> {
        let defaults = || Versioned {
            id: BOUNDS_ID.to_owned(),
            version: 0,
            value: BoundsRecord {
                bounds: Bounds::default(),
                updated_at_ms: 0,
                updated_by: String::new(),
            },
        };
        Ok(self.db.bounds.get(BOUNDS_ID).await?.unwrap_or_else(defaults))
    }

    /// The bounds, for anyone signed in (a group admin needs them to write rules that pass).
    pub async fn get_service_account_bounds(
        &self,
        caller: &Caller,
    ) -> Result<Versioned<BoundsRecord>, AuthError> {
        self.principal(caller).await?;
        self.service_account_bounds().await
    }

    /// Replaces the bounds (super admins). Rules already stored are kept as they are; each
    /// group with rules is told to apply them again, and a zone applies only rules inside the
    /// new bounds (the zone-manager checks), so a narrowing takes effect without a deploy.
    pub async fn set_service_account_bounds(
        &self,
        caller: &Caller,
        bounds: Bounds,
        expected_version: u64,
    ) -> Result<Versioned<BoundsRecord>, AuthError> {
        let result = async {
            if !self.principal(caller).await?.is_super_admin() {
                return Err(AuthError::Denied(
                    "only super admins set the service-account bounds".into(),
                ));
            }
            bounds.validate().map_err(|e| AuthError::invalid("bounds", e.to_string()))?;
            let record = BoundsRecord {
                bounds,
                updated_at_ms: now_ms(),
                updated_by: caller.audit_actor().to_owned(),
            };
            let written = if expected_version == 0 {
                let version = self.db.bounds.put(BOUNDS_ID, &record).await?;
                Versioned { id: BOUNDS_ID.to_owned(), version, value: record }
            } else {
                let current =
                    Versioned { id: BOUNDS_ID.to_owned(), version: expected_version, value: record };
                match self.db.bounds.update(current).await {
                    Ok(written) => written,
                    Err(StoreError::VersionConflict { actual, .. }) => {
                        return Err(AuthError::Conflict(format!(
                            "service-account bounds are at version {actual}, not {expected_version}; re-read and retry"
                        )));
                    }
                    Err(StoreError::NotFound { .. }) => {
                        return Err(AuthError::Conflict(format!(
                            "service-account bounds were never set; expected version {expected_version} does not exist"
                        )));
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            for group in self.db.service_accounts.find(&ramen_store::Query::new()).await? {
                if !group.value.rules.is_empty() {
                    self.publish_rules_change(caller, &group.id, group.version).await;
                }
            }
            Ok(written)
        }
        .await;
        self.audited(
            caller,
            "service_account_bounds.set",
            "",
            "platform/service-account-bounds",
            Default::default(),
            result,
        )
        .await
    }

    /// The rules are stored either way; a zone that misses the event gets them at its next
    /// deploy (EnsurePlacement applies the identity again).
    async fn publish_rules_change(&self, caller: &Caller, group: &str, version: u64) {
        let event = ServiceAccountRulesChanged {
            meta: Some(crate::events::meta(caller)),
            group: group.to_owned(),
            version,
        };
        if let Err(error) = self.events.publish(&event).await {
            tracing::warn!(%error, group, "service-account rules set; ServiceAccountRulesChanged not published");
        }
    }
}
