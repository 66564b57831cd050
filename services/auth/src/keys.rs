//! MCP keys: the plaintext (`rk_` + 256 random bits, base64url) is returned once by create;
//! only a short prefix (to recognise a key in lists) and the lowercase hex SHA-256 the node
//! compares are stored. Create and revoke publish `McpKeyChanged`, and the zone-manager pushes
//! the new hash list to the running nodes of the affected placements.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{KeyHash, PageInfo, PageRequest};
use ramen_proto::events::v1::{McpKeyChange, McpKeyChanged};
use ramen_store::{Query, StoreError, Versioned};
use rand::RngCore;

use crate::audit::details;
use crate::error::AuthError;
use crate::events::meta;
use crate::model::{McpKeyRecord, new_id, now_ms};
use crate::{Auth, paging, validate};
use ramen_access::Caller;

/// `rk_` and 8 characters of the key.
pub const PREFIX_LEN: usize = 11;

pub struct NewKey {
    pub group: String,
    pub name: String,
    pub environments: Vec<String>,
    pub zones: Vec<String>,
    pub expires_at_ms: Option<i64>,
}

/// Lowercase hex SHA-256, the form the node compares a presented Bearer key with.
pub fn key_hash(plaintext: &str) -> String {
    ramen_node_contract::key_hash(plaintext)
}

fn generate() -> String {
    let mut raw = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    format!("rk_{}", B64URL.encode(raw))
}

impl Auth {
    pub async fn create_key(
        &self,
        caller: &Caller,
        new: NewKey,
    ) -> Result<(Versioned<McpKeyRecord>, String), AuthError> {
        let (group, name) = (new.group.clone(), new.name.clone());
        let result = async {
            validate::group(&new.group)?;
            self.require(caller, &new.group, Action::ManageKeys).await?;
            validate::display_name("name", &new.name)?;
            new.environments.iter().try_for_each(|e| validate::dns_label("environments", e))?;
            new.zones.iter().try_for_each(|z| validate::dns_label("zones", z))?;
            let now = now_ms();
            if new.expires_at_ms.is_some_and(|at| at <= now) {
                return Err(AuthError::invalid("expires_at", "must be in the future"));
            }
            let plaintext = generate();
            let record = McpKeyRecord {
                group: new.group,
                name: new.name,
                prefix: plaintext[..PREFIX_LEN].to_owned(),
                sha256_hex: key_hash(&plaintext),
                environments: new.environments,
                zones: new.zones,
                expires_at_ms: new.expires_at_ms,
                created_at_ms: now,
                created_by: caller.audit_actor().to_owned(),
                revoked_at_ms: None,
                last_used_at_ms: None,
            };
            let id = new_id();
            let version = self.db.keys.insert(&id, &record).await?;
            let key = Versioned { id, version, value: record };
            // The key exists either way; a node that misses the event gets it at the next push.
            if let Err(error) = self.publish_key_change(caller, &key, McpKeyChange::Created).await {
                tracing::warn!(%error, key = %key.id, "MCP key created; McpKeyChanged not published");
            }
            Ok((key, plaintext))
        }
        .await;
        let target = match &result {
            Ok((key, _)) => format!("key/{}", key.id),
            Err(_) => "key".to_owned(),
        };
        self.audited(caller, "key.create", &group, &target, details([("name", name)]), result).await
    }

    pub async fn list_keys(
        &self,
        caller: &Caller,
        group: &str,
        page: Option<&PageRequest>,
        include_revoked: bool,
    ) -> Result<(Vec<Versioned<McpKeyRecord>>, PageInfo), AuthError> {
        validate::group(group)?;
        self.require(caller, group, Action::ReadGroup).await?;
        let page = paging::parse(page)?;
        let mut query = Query::new()
            .eq("group", group)
            .sort_desc("created_at_ms")
            .skip(page.offset)
            .limit(page.probe());
        if !include_revoked {
            query = query.eq("revoked_at_ms", serde_json::Value::Null);
        }
        let mut keys = self.db.keys.find(&query).await?;
        let info = page.finish(&mut keys);
        Ok((keys, info))
    }

    /// Idempotent. Fails with UNAVAILABLE when the revocation is stored but the event could not
    /// be published: retrying publishes it again.
    pub async fn revoke_key(
        &self,
        caller: &Caller,
        group: &str,
        key_id: &str,
    ) -> Result<Versioned<McpKeyRecord>, AuthError> {
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageKeys).await?;
            let not_found = || AuthError::NotFound(format!("key `{key_id}`"));
            let key = self
                .db
                .keys
                .get(key_id)
                .await?
                .filter(|k| k.value.group == group)
                .ok_or_else(not_found)?;
            let key = if key.value.revoked_at_ms.is_some() {
                key
            } else {
                let now = now_ms();
                let change = |k: &mut McpKeyRecord| {
                    k.revoked_at_ms.get_or_insert(now);
                    Ok::<_, AuthError>(())
                };
                self.db.keys.modify(key_id, change).await?.0
            };
            self.publish_key_change(caller, &key, McpKeyChange::Revoked).await.map_err(|e| {
                AuthError::Unavailable(format!(
                    "key revoked, but running nodes were not told ({e}); retry"
                ))
            })?;
            Ok(key)
        }
        .await;
        self.audited(caller, "key.revoke", group, &format!("key/{key_id}"), details([]), result)
            .await
    }

    async fn publish_key_change(
        &self,
        caller: &Caller,
        key: &Versioned<McpKeyRecord>,
        change: McpKeyChange,
    ) -> Result<(), ramen_bus::BusError> {
        let event = McpKeyChanged {
            meta: Some(meta(caller)),
            group: key.value.group.clone(),
            key_id: key.id.clone(),
            change: change as i32,
            environments: key.value.environments.clone(),
            zones: key.value.zones.clone(),
        };
        self.events.publish(&event).await
    }

    /// Hashes of the live keys valid on `environment` × `zone` (node config). Control plane
    /// and super admins only.
    pub async fn list_key_hashes(
        &self,
        caller: &Caller,
        group: &str,
        environment: &str,
        zone: &str,
        page: Option<&PageRequest>,
    ) -> Result<(Vec<KeyHash>, PageInfo), AuthError> {
        validate::group(group)?;
        if !self.principal(caller).await?.is_super_admin() {
            return Err(AuthError::Denied("key hashes are for the control plane".into()));
        }
        let page = paging::parse(page)?;
        let now = now_ms();
        let live = Query::new()
            .eq("group", group)
            .eq("revoked_at_ms", serde_json::Value::Null)
            .sort_asc("created_at_ms");
        let applies = |scope: &[String], value: &str| {
            scope.is_empty() || value.is_empty() || scope.iter().any(|s| s == value)
        };
        let mut hashes: Vec<KeyHash> = self
            .db
            .keys
            .find(&live)
            .await?
            .into_iter()
            .filter(|k| k.value.expires_at_ms.is_none_or(|at| at > now))
            .filter(|k| {
                applies(&k.value.environments, environment) && applies(&k.value.zones, zone)
            })
            .skip(page.offset as usize)
            .take(page.probe() as usize)
            .map(|k| KeyHash {
                key_id: k.id,
                sha256_hex: k.value.sha256_hex,
                expires_at_unix_ms: k.value.expires_at_ms.unwrap_or(0),
                key_name: k.value.name,
            })
            .collect();
        let info = page.finish(&mut hashes);
        Ok((hashes, info))
    }

    /// When keys were last used, as the edge reports them in batches (control plane only). A
    /// use within [`LAST_USED_GRAIN_MS`] of the stored time, an unknown key or one of another
    /// group changes nothing; a write that loses a race is dropped (the next batch carries a
    /// later time anyway). Answers how many records changed.
    pub async fn record_key_use(
        &self,
        caller: &Caller,
        uses: Vec<(String, String, i64)>,
    ) -> Result<u32, AuthError> {
        if caller.service().is_none() {
            return Err(AuthError::Denied("key use is reported by the control plane".into()));
        }
        if uses.len() > MAX_USES_PER_BATCH {
            return Err(AuthError::invalid(
                "uses",
                format!("at most {MAX_USES_PER_BATCH} per call"),
            ));
        }
        let mut recorded = 0;
        for (group, key_id, at_ms) in uses {
            let Some(mut key) = self.db.keys.get(&key_id).await? else { continue };
            let stale =
                key.value.last_used_at_ms.is_none_or(|last| at_ms >= last + LAST_USED_GRAIN_MS);
            if key.value.group != group || !stale {
                continue;
            }
            key.value.last_used_at_ms = Some(at_ms - at_ms % LAST_USED_GRAIN_MS);
            match self.db.keys.update(key).await {
                Ok(_) => recorded += 1,
                Err(StoreError::VersionConflict { .. } | StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(recorded)
    }
}

/// "Last used" is kept to the minute: a busy key costs one write a minute, not one a request.
pub const LAST_USED_GRAIN_MS: i64 = 60_000;
const MAX_USES_PER_BATCH: usize = 5_000;
