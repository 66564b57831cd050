//! Group secrets, sealed at rest ([`crate::seal`]). Values go in through SetSecret and come out
//! only through ResolveSecrets, to the deployer; no list, error or log carries one.

use std::collections::BTreeMap;

use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_proto::metadata::ACTOR_DEPLOYER;
use ramen_store::{Collection, Filter, Query, StoreError, Versioned};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{SecretRecord, now_ms, secret_id};
use crate::seal::{Sealer, SecretValue};
use crate::{Auth, paging, validate};
use ramen_access::Caller;

/// Where a secret applies: both empty = the whole group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub environment: String,
    pub zone: String,
}

impl Scope {
    fn describe(&self) -> String {
        let any = |s: &str| if s.is_empty() { "*".to_owned() } else { s.to_owned() };
        format!("{}/{}", any(&self.environment), any(&self.zone))
    }
}

/// A resolved value and the scope it came from (`Debug` hides the value).
#[derive(Debug)]
pub struct Resolved {
    pub name: String,
    pub value: SecretValue,
    pub scope: Scope,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ResealReport {
    pub resealed: u64,
    pub current: u64,
}

impl Auth {
    pub async fn set_secret(
        &self,
        caller: &Caller,
        group: &str,
        name: &str,
        scope: Scope,
        value: SecretValue,
    ) -> Result<Versioned<SecretRecord>, AuthError> {
        let target = format!("secret/{name}");
        let extra = details([("scope", scope.describe())]);
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageSecrets).await?;
            validate::secret_name(name)?;
            validate::scope("scope.environment", &scope.environment)?;
            validate::scope("scope.zone", &scope.zone)?;
            validate::secret_value(value.expose())?;
            let id = secret_id(group, &scope.environment, &scope.zone, name);
            let now = now_ms();
            let created = self.db.secrets.get(&id).await?.map_or(now, |s| s.value.created_at_ms);
            let record = SecretRecord {
                group: group.to_owned(),
                name: name.to_owned(),
                environment: scope.environment,
                zone: scope.zone,
                sealed: self.sealer.seal(&id, &value),
                created_at_ms: created,
                updated_at_ms: now,
                updated_by: caller.audit_actor().to_owned(),
            };
            let version = self.db.secrets.put(&id, &record).await?;
            Ok(Versioned { id, version, value: record })
        }
        .await;
        self.audited(caller, "secret.set", group, &target, extra, result).await
    }

    pub async fn list_secrets(
        &self,
        caller: &Caller,
        group: &str,
        page: Option<&PageRequest>,
    ) -> Result<(Vec<Versioned<SecretRecord>>, PageInfo), AuthError> {
        validate::group(group)?;
        self.require(caller, group, Action::ReadGroup).await?;
        let page = paging::parse(page)?;
        let query =
            Query::new().eq("group", group).sort_asc("name").skip(page.offset).limit(page.probe());
        let mut secrets = self.db.secrets.find(&query).await?;
        let info = page.finish(&mut secrets);
        Ok((secrets, info))
    }

    /// Idempotent.
    pub async fn delete_secret(
        &self,
        caller: &Caller,
        group: &str,
        name: &str,
        scope: Scope,
    ) -> Result<(), AuthError> {
        let extra = details([("scope", scope.describe())]);
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageSecrets).await?;
            validate::secret_name(name)?;
            self.db
                .secrets
                .delete(&secret_id(group, &scope.environment, &scope.zone, name), None)
                .await?;
            Ok(())
        }
        .await;
        self.audited(caller, "secret.delete", group, &format!("secret/{name}"), extra, result).await
    }

    /// One value per name for a deploy scope, the most specific scope winning. Deployer only.
    pub async fn resolve_secrets(
        &self,
        caller: &Caller,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<Resolved>, AuthError> {
        let extra = details([(
            "scope",
            Scope { environment: environment.into(), zone: zone.into() }.describe(),
        )]);
        let result = async {
            if caller.actor != ACTOR_DEPLOYER {
                return Err(AuthError::Denied("only the deployer resolves secret values".into()));
            }
            validate::group(group)?;
            let applies = |s: &SecretRecord| {
                (s.environment.is_empty() || s.environment == environment)
                    && (s.zone.is_empty() || s.zone == zone)
            };
            let rank = |s: &SecretRecord| {
                2 * u8::from(!s.environment.is_empty()) + u8::from(!s.zone.is_empty())
            };
            let mut chosen: BTreeMap<String, Versioned<SecretRecord>> = BTreeMap::new();
            for secret in self.db.secrets.find(&Query::new().eq("group", group)).await? {
                if !applies(&secret.value) {
                    continue;
                }
                let better = chosen
                    .get(&secret.value.name)
                    .is_none_or(|c| rank(&secret.value) > rank(&c.value));
                if better {
                    chosen.insert(secret.value.name.clone(), secret);
                }
            }
            chosen
                .into_values()
                .map(|s| {
                    let value = self.sealer.unseal(&s.id, &s.value.sealed)?;
                    let scope = Scope { environment: s.value.environment, zone: s.value.zone };
                    Ok(Resolved { name: s.value.name, value, scope })
                })
                .collect::<Result<Vec<_>, AuthError>>()
        }
        .await;
        self.audited(caller, "secret.resolve", group, "secrets", extra, result).await
    }
}

/// Re-seals every value sealed under another key than the current one (`ramen admin reseal`,
/// after rotating `RAMEN_SECRETS_KEY` with the old key set as `RAMEN_SECRETS_PREVIOUS_KEY`).
/// Idempotent and safe while serving: each record is rewritten under its version. A value that
/// opens with neither key stops the run with an error naming nothing but the failure.
pub async fn reseal(
    secrets: &Collection<SecretRecord>,
    sealer: &Sealer,
) -> Result<ResealReport, AuthError> {
    let mut report = ResealReport::default();
    for secret in secrets.find(&Query::new().filter(Filter::new())).await? {
        if !sealer.is_stale(&secret.value.sealed) {
            report.current += 1;
            continue;
        }
        let id = secret.id.clone();
        let change = |s: &mut SecretRecord| {
            if sealer.is_stale(&s.sealed) {
                s.sealed = sealer.reseal(&id, &s.sealed)?;
            }
            Ok::<_, AuthError>(())
        };
        match secrets.modify(&secret.id, change).await {
            Ok(_) => report.resealed += 1,
            Err(AuthError::Store(StoreError::NotFound { .. })) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

impl Auth {
    /// [`reseal`] over this service's collection and keys.
    pub async fn reseal_all(&self) -> Result<ResealReport, AuthError> {
        reseal(&self.db.secrets, &self.sealer).await
    }
}
