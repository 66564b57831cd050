//! Login, refresh, logout and password change.

use ramen_store::{Filter, StoreError, Versioned};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{UserRecord, new_id, now_ms};
use crate::token::AccessClaims;
use crate::{Auth, password, refresh, validate};
use ramen_access::Caller;

/// What login, refresh and password change hand back.
pub struct Session {
    pub access_token: String,
    pub access_expires_at_ms: i64,
    pub refresh: refresh::Issued,
    pub user: Versioned<UserRecord>,
}

/// Runs argon2 on the blocking pool (it takes tens of milliseconds of CPU by design).
async fn verify_password(password: &str, phc: &str) -> bool {
    let (password, phc) = (password.to_owned(), phc.to_owned());
    tokio::task::spawn_blocking(move || password::verify(&password, &phc)).await.unwrap_or(false)
}

pub(crate) async fn hash_password(password: &str) -> Result<String, AuthError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || password::hash(&password))
        .await
        .map_err(|e| AuthError::Unavailable(format!("password hashing failed: {e}")))
}

impl Auth {
    pub async fn login(
        &self,
        caller: &Caller,
        email: &str,
        password: &str,
    ) -> Result<Session, AuthError> {
        let result = self.try_login(email, password).await;
        let actor_ctx = match &result {
            Ok(session) => Caller::new(session.user.id.clone(), caller.request_id.clone()),
            Err(_) => caller.clone(),
        };
        // Whatever was typed, bounded: the audit entry is written for failures too.
        let email: String = email.trim().to_ascii_lowercase().chars().take(254).collect();
        self.audited(&actor_ctx, "session.login", "", &format!("user/{email}"), details([]), result)
            .await
    }

    async fn try_login(&self, email: &str, password: &str) -> Result<Session, AuthError> {
        self.sso.password_sign_in()?;
        let email = validate::email(email.trim()).map_err(|_| AuthError::BadCredentials)?;
        let user = self.db.users.find_one(Filter::new().eq("email", email.as_str())).await?;
        let Some(user) = user else {
            // Same work as a wrong password, so timing does not tell which emails exist.
            verify_password(password, password::dummy_hash()).await;
            return Err(AuthError::BadCredentials);
        };
        // An account that signs in through the identity provider has no password: the same
        // argon2 work as a wrong one, so timing does not tell such accounts apart.
        let hash = match user.value.password_hash.as_str() {
            "" => password::dummy_hash(),
            hash => hash,
        };
        if !verify_password(password, hash).await || user.value.password_hash.is_empty() {
            return Err(AuthError::BadCredentials);
        }
        let user = self.record_login(&user.id).await?;
        self.open_session(user, None).await
    }

    /// Notes the sign-in's time on the account (shown as "last login").
    pub(crate) async fn record_login(
        &self,
        user_id: &str,
    ) -> Result<Versioned<UserRecord>, AuthError> {
        let now = now_ms();
        let (user, ()) = self
            .db
            .users
            .modify(user_id, |u| {
                u.last_login_at_ms = Some(now);
                Ok::<_, StoreError>(())
            })
            .await?;
        Ok(user)
    }

    /// Signs an access token for `user` and adds a refresh token to `family` (new if `None`).
    pub(crate) async fn open_session(
        &self,
        user: Versioned<UserRecord>,
        family: Option<String>,
    ) -> Result<Session, AuthError> {
        let family = family.unwrap_or_else(new_id);
        let claims = AccessClaims {
            sub: user.id.clone(),
            email: user.value.email.clone(),
            sa: user.value.super_admin,
            mcp: user.value.must_change_password,
            iat: 0,
            exp: 0,
            sid: family.clone(),
            kid: String::new(),
        };
        let (access_token, claims) = self.tokens.issue(claims, now_ms() / 1000);
        let refresh = self.issue_refresh(&user.id, family).await?;
        Ok(Session { access_token, access_expires_at_ms: claims.exp * 1000, refresh, user })
    }

    pub async fn refresh(&self, token: &str) -> Result<Session, AuthError> {
        if token.trim().is_empty() {
            return Err(refresh::invalid());
        }
        let used = self.rotate_refresh(token).await?;
        let Some(user) = self.db.users.get(&used.user_id).await? else {
            self.revoke_family(&used.family_id).await?;
            return Err(AuthError::Unauthenticated("the user no longer exists".into()));
        };
        self.open_session(user, Some(used.family_id)).await
    }

    /// Revokes the token's family. Unknown tokens are fine (idempotent).
    pub async fn logout(&self, caller: &Caller, token: &str) -> Result<(), AuthError> {
        let Some(record) = self.db.refresh.get(&refresh::hash(token)).await? else { return Ok(()) };
        let family = record.value.family_id;
        let result = self.revoke_family(&family).await.map(|_| ());
        let caller = Caller::new(record.value.user_id, caller.request_id.clone());
        self.audited(
            &caller,
            "session.logout",
            "",
            &format!("session/{family}"),
            details([]),
            result,
        )
        .await
    }

    /// The caller changes their own password; other sessions of the user are revoked and a new
    /// one is returned. Clears a one-time password.
    pub async fn change_password(
        &self,
        caller: &Caller,
        user_id: &str,
        current: &str,
        new: &str,
    ) -> Result<Session, AuthError> {
        let result = self.try_change_password(caller, user_id, current, new).await;
        self.audited(
            caller,
            "user.change_password",
            "",
            &format!("user/{user_id}"),
            details([]),
            result,
        )
        .await
    }

    async fn try_change_password(
        &self,
        caller: &Caller,
        user_id: &str,
        current: &str,
        new: &str,
    ) -> Result<Session, AuthError> {
        self.sso.password_sign_in()?;
        if caller.actor != user_id {
            return Err(AuthError::Denied("users change only their own password".into()));
        }
        let user = self
            .db
            .users
            .get(user_id)
            .await?
            .ok_or_else(|| AuthError::Unauthenticated("unknown user".into()))?;
        if !verify_password(current, &user.value.password_hash).await {
            return Err(AuthError::BadCredentials);
        }
        password::check_new(new).map_err(|reason| AuthError::invalid("new_password", reason))?;
        if new == current {
            return Err(AuthError::invalid(
                "new_password",
                "must differ from the current password",
            ));
        }
        let hashed = hash_password(new).await?;
        let now = now_ms();
        let (user, ()) = self
            .db
            .users
            .modify(user_id, |u| {
                u.password_hash = hashed.clone();
                u.must_change_password = false;
                u.updated_at_ms = now;
                Ok::<_, StoreError>(())
            })
            .await?;
        self.revoke_user_sessions(user_id).await?;
        self.open_session(user, None).await
    }

    /// Verifies an access token (any accepted signing key, its session not revoked) for
    /// services that check tokens.
    pub async fn verify_access(&self, token: &str) -> Result<AccessClaims, AuthError> {
        let claims = self
            .tokens
            .verify(token, now_ms() / 1000)
            .map_err(|e| AuthError::Unauthenticated(e.to_string()))?;
        self.session_live(&claims.sid).await?;
        Ok(claims)
    }
}
