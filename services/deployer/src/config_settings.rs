//! The deployer's Config page settings (super admins): the GitHub App (id, sealed private key),
//! published as `SettingsChanged`. The auto-rebalance switch and period are the rebalancer's
//! (`UpdateSchedulerSettings`); what the deployer stored of them before is still answered, for
//! the rebalancer to carry over once.

use ramen_crypto::seal::SecretValue;
use ramen_proto::auth::v1::Action;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::SettingsChanged;

use crate::AppSettings;
use crate::caller::{Caller, require};
use crate::error::{Error, Result};
use crate::model::{
    APP_KEY_AAD, DEFAULT_REBALANCE_INTERVAL_SECONDS, SETTINGS_ID, SettingsRecord, now_ms,
};

impl AppSettings {
    pub async fn get_settings(&self, ctx: &Caller) -> Result<SettingsRecord> {
        require(ctx, "", Action::Admin)?;
        self.settings_record().await
    }

    pub async fn update_settings(
        &self,
        ctx: &Caller,
        r: pb::UpdateSettingsRequest,
    ) -> Result<SettingsRecord> {
        require(ctx, "", Action::Admin)?;
        if r.github_app_id.is_some_and(|id| id < 0) {
            return Err(Error::invalid("github_app_id", "must be positive (0 = no App)"));
        }
        for (field, set) in [
            ("auto_rebalance_enabled", r.auto_rebalance_enabled.is_some()),
            ("auto_rebalance_interval_seconds", r.auto_rebalance_interval_seconds.is_some()),
        ] {
            if set {
                return Err(Error::invalid(
                    field,
                    "the auto-rebalance settings are the rebalancer's: RebalancerService.UpdateSchedulerSettings",
                ));
            }
        }
        let sealed = match &r.github_app_private_key {
            Some(key) if !key.is_empty() => {
                if !ramen_service::rules::PEM_PRIVATE_KEY.accepts(key) {
                    return Err(Error::invalid(
                        "github_app_private_key",
                        "is not a PEM private key (-----BEGIN … PRIVATE KEY-----)",
                    ));
                }
                let sealer = self.sealer.as_ref().ok_or_else(|| {
                    Error::FailedPrecondition("no secrets key is configured (RAMEN_SECRETS_KEY): the App key cannot be sealed".into())
                })?;
                Some(Some(sealer.seal(APP_KEY_AAD, &SecretValue::new(key.clone()))))
            }
            Some(_) => Some(None),
            None => None,
        };
        let mut record = self.settings_record().await?;
        if let Some(id) = r.github_app_id {
            record.github_app_id = id;
        }
        if let Some(sealed) = sealed {
            record.github_app_private_key = sealed;
        }
        record.updated_at_ms = now_ms();
        record.updated_by = ctx.audit_actor().to_owned();
        self.core.db.settings.put(SETTINGS_ID, &record).await?;
        let event = SettingsChanged {
            meta: Some(crate::ports::events::meta(ctx)),
            auto_rebalance_enabled: record.auto_rebalance_enabled,
            auto_rebalance_interval_seconds: record.auto_rebalance_interval_seconds,
            github_app_configured: app_configured(&record),
        };
        self.core.events.publish(&event).await;
        let details = [
            ("github_app_id", record.github_app_id.to_string()),
            ("github_app_private_key_set", record.github_app_private_key.is_some().to_string()),
        ];
        self.core.audit(ctx, "settings.update", "", "settings", details).await;
        Ok(record)
    }

    pub(crate) async fn settings_record(&self) -> Result<SettingsRecord> {
        Ok(self.core.db.settings.get(SETTINGS_ID).await?.map(|s| s.value).unwrap_or(
            SettingsRecord {
                auto_rebalance_interval_seconds: DEFAULT_REBALANCE_INTERVAL_SECONDS,
                ..SettingsRecord::default()
            },
        ))
    }
}

pub fn app_configured(record: &SettingsRecord) -> bool {
    record.github_app_id > 0 && record.github_app_private_key.is_some()
}

pub fn to_proto(record: &SettingsRecord) -> pb::Settings {
    pb::Settings {
        github_app_id: record.github_app_id,
        github_app_private_key_set: record.github_app_private_key.is_some(),
        auto_rebalance_enabled: record.auto_rebalance_enabled,
        auto_rebalance_interval_seconds: record.auto_rebalance_interval_seconds,
        updated_at: crate::conversions::ts(record.updated_at_ms),
        updated_by: record.updated_by.clone(),
    }
}
