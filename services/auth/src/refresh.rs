//! Refresh tokens: 256 random bits, stored only as their SHA-256, rotated on every use. A login
//! starts a *family*; presenting a token that was already rotated means two parties hold the
//! family (a stolen token, or a client replaying an old one), so the whole family is revoked.
//!
//! A family is a *session*: its access tokens name it (`sid`). Ending a session — logout, a
//! password change, a reused token, the user's deletion — records it in
//! `auth_revoked_sessions`, which `Authorize` / `GetGrants` read on every REST request, so its
//! access tokens stop working at once on every replica instead of living out their 15 minutes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use std::collections::BTreeSet;

use ramen_store::{Filter, Query, StoreError, Versioned};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::Auth;
use crate::error::AuthError;
use crate::model::{RefreshRecord, RevokedSessionRecord, now_ms};

/// How much longer than the access TTL a revocation is kept (clock skew between replicas).
const REVOCATION_MARGIN_MS: i64 = 60_000;

pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.trim().as_bytes()))
}

fn generate() -> String {
    let mut raw = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    format!("rt_{}", B64URL.encode(raw))
}

/// A freshly issued refresh token (the plaintext leaves the service once, in the response).
pub struct Issued {
    pub token: String,
    pub expires_at_ms: i64,
}

pub fn invalid() -> AuthError {
    AuthError::Unauthenticated("refresh token is not valid".into())
}

impl Auth {
    /// Adds a token to `family`.
    pub(crate) async fn issue_refresh(
        &self,
        user_id: &str,
        family: String,
    ) -> Result<Issued, AuthError> {
        let token = generate();
        let now = now_ms();
        let record = RefreshRecord {
            user_id: user_id.to_owned(),
            family_id: family,
            created_at_ms: now,
            expires_at_ms: now + self.refresh_ttl.as_millis() as i64,
            used_at_ms: None,
            revoked_at_ms: None,
        };
        self.db.refresh.insert(&hash(&token), &record).await?;
        Ok(Issued { token, expires_at_ms: record.expires_at_ms })
    }

    /// Marks `token` used and returns its record; a reused token revokes its family.
    pub(crate) async fn rotate_refresh(&self, token: &str) -> Result<RefreshRecord, AuthError> {
        let id = hash(token);
        let Some(mut current) = self.db.refresh.get(&id).await? else { return Err(invalid()) };
        let now = now_ms();
        loop {
            let record = &current.value;
            if record.revoked_at_ms.is_some() {
                return Err(AuthError::Unauthenticated(
                    "the session was revoked; sign in again".into(),
                ));
            }
            if record.used_at_ms.is_some() {
                let family = record.family_id.clone();
                let revoked = self.revoke_family(&family).await?;
                tracing::warn!(family = %family, user = %record.user_id, revoked, "refresh token reused; session family revoked");
                return Err(AuthError::Unauthenticated(
                    "refresh token was already used; the session is revoked".into(),
                ));
            }
            if record.expires_at_ms <= now {
                return Err(AuthError::Unauthenticated(
                    "refresh token expired; sign in again".into(),
                ));
            }
            let mut used = current.clone();
            used.value.used_at_ms = Some(now);
            match self.db.refresh.update(used).await {
                Ok(written) => return Ok(written.value),
                // A concurrent refresh won: re-read, which now shows the token used.
                Err(StoreError::VersionConflict { .. }) => {
                    current = self.db.refresh.get(&id).await?.ok_or_else(invalid)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Ends a session: its access tokens are refused from now on, and every refresh token of
    /// the family is revoked; returns how many were live.
    pub(crate) async fn revoke_family(&self, family: &str) -> Result<u64, AuthError> {
        let live = self.live_tokens(Filter::new().eq("family_id", family)).await?;
        let user = live.first().map(|t| t.value.user_id.clone()).unwrap_or_default();
        self.void_access(family, &user).await?;
        self.revoke_tokens(live).await
    }

    /// Ends every session of the user (a password change, the user's deletion).
    pub(crate) async fn revoke_user_sessions(&self, user_id: &str) -> Result<u64, AuthError> {
        let live = self.live_tokens(Filter::new().eq("user_id", user_id)).await?;
        let families: BTreeSet<&str> = live.iter().map(|t| t.value.family_id.as_str()).collect();
        for family in families {
            self.void_access(family, user_id).await?;
        }
        self.revoke_tokens(live).await
    }

    /// Records the session as ended *before* its refresh tokens are revoked, so a failure in
    /// between leaves nothing a revoked session could still use. Every family that can hold a
    /// live access token has a live refresh token (its latest), so the live tokens name them all.
    async fn void_access(&self, family: &str, user_id: &str) -> Result<(), AuthError> {
        let now = now_ms();
        // Outlives any access token of the session: each was issued before now.
        let expires_at_ms = now + self.tokens.ttl().as_millis() as i64 + REVOCATION_MARGIN_MS;
        let record =
            RevokedSessionRecord { user_id: user_id.to_owned(), revoked_at_ms: now, expires_at_ms };
        self.db.revoked.put(family, &record).await?;
        Ok(())
    }

    /// Refuses an access token whose session ended (an empty `sid`: a token issued before
    /// sessions were named, or a service actor's call).
    pub async fn session_live(&self, sid: &str) -> Result<(), AuthError> {
        if sid.is_empty() || self.db.revoked.get(sid).await?.is_none() {
            return Ok(());
        }
        Err(AuthError::Unauthenticated("this session was signed out; sign in again".into()))
    }

    async fn live_tokens(
        &self,
        filter: Filter,
    ) -> Result<Vec<Versioned<RefreshRecord>>, AuthError> {
        let live = filter.eq("revoked_at_ms", serde_json::Value::Null);
        Ok(self.db.refresh.find(&Query::new().filter(live)).await?)
    }

    async fn revoke_tokens(&self, live: Vec<Versioned<RefreshRecord>>) -> Result<u64, AuthError> {
        let now = now_ms();
        let mut revoked = 0;
        for token in live {
            let result = self.db.refresh.modify(&token.id, |r| {
                let fresh = r.revoked_at_ms.is_none();
                r.revoked_at_ms.get_or_insert(now);
                Ok::<_, StoreError>(fresh)
            });
            match result.await {
                Ok((_, true)) => revoked += 1,
                Ok((_, false)) | Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(revoked)
    }

    /// Deletes tokens that expired more than a day ago, and revocations no access token can
    /// need any more (the sweeper task).
    pub(crate) async fn sweep_refresh(&self) -> Result<u64, AuthError> {
        let now = now_ms();
        let cutoff = now - 24 * 3600 * 1000;
        let tokens =
            self.db.refresh.delete_many(&Filter::new().lt("expires_at_ms", cutoff)).await?;
        let ended = self.db.revoked.delete_many(&Filter::new().lt("expires_at_ms", now)).await?;
        // Sign-ins started and never finished, and CLI codes never redeemed.
        let flows = self.db.sso_flows.delete_many(&Filter::new().lt("expires_at_ms", now)).await?;
        let codes = self.db.sso_codes.delete_many(&Filter::new().lt("expires_at_ms", now)).await?;
        Ok(tokens + ended + flows + codes)
    }
}
