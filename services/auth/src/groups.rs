//! The group registry (the seam with the deployer, which owns groups) and the group purge of
//! the deletion saga.
//!
//! The deployer calls `RegisterGroup` when it creates a group, before writing its own record;
//! the call is idempotent, so a retried create is fine, and a registration left behind by a
//! create that failed later only reserves the name until the group is created again or purged.
//! `GroupDeleted` → the deployer (or whoever runs the saga) calls `PurgeGroup`, which removes
//! the registration with everything else auth holds for the group except its audit entries.

use ramen_proto::auth::v1::Action;
use ramen_proto::auth::v1::PurgeGroupResponse;
use ramen_store::{Filter, StoreError};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{GroupRecord, now_ms};
use crate::{Auth, validate};
use ramen_access::Caller;

impl Auth {
    /// Records that `group` exists; false when it was already registered.
    pub async fn register_group(&self, caller: &Caller, group: &str) -> Result<bool, AuthError> {
        let result = async {
            validate::group(group)?;
            let caller = self.require(caller, "", Action::CreateGroup).await?;
            let record =
                GroupRecord { created_at_ms: now_ms(), created_by: caller.id().to_owned() };
            match self.db.groups.insert(group, &record).await {
                Ok(_) => Ok(true),
                Err(StoreError::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        .await;
        self.audited(
            caller,
            "group.register",
            group,
            &format!("group/{group}"),
            details([]),
            result,
        )
        .await
    }

    pub async fn group_exists(&self, group: &str) -> Result<bool, AuthError> {
        Ok(self.db.groups.get(group).await?.is_some())
    }

    /// Deletes the group's keys, secrets, memberships, rules and registration. Idempotent.
    pub async fn purge_group(
        &self,
        caller: &Caller,
        group: &str,
    ) -> Result<PurgeGroupResponse, AuthError> {
        let result = async {
            validate::group(group)?;
            let caller = self.principal(caller).await?;
            if !caller.is_super_admin() {
                return Err(AuthError::Denied(
                    "only super admins and the control plane purge groups".into(),
                ));
            }
            let in_group = Filter::new().eq("group", group);
            let purged = PurgeGroupResponse {
                keys_deleted: self.db.keys.delete_many(&in_group).await?,
                secrets_deleted: self.db.secrets.delete_many(&in_group).await?,
                memberships_deleted: self.db.memberships.delete_many(&in_group).await?,
                service_account_rules_deleted: self.db.service_accounts.delete(group, None).await?,
            };
            self.db.groups.delete(group, None).await?;
            Ok(purged)
        }
        .await;
        let extra = match &result {
            Ok(p) => details([
                ("keys_deleted", p.keys_deleted.to_string()),
                ("secrets_deleted", p.secrets_deleted.to_string()),
                ("memberships_deleted", p.memberships_deleted.to_string()),
            ]),
            Err(_) => details([]),
        };
        self.audited(caller, "group.purge", group, &format!("group/{group}"), extra, result).await
    }
}
