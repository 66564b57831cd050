//! Single sign-on for people, with the organisation's OpenID provider (`sso.*` config).
//!
//! The flow's secrets stay here: [`Auth::start_sso`] keeps the nonce and the PKCE verifier
//! under the SHA-256 of the `state` (the gateway binds the state to the browser with a cookie);
//! [`Auth::finish_sso`] takes that record once, redeems the code at the provider
//! (`ramen-oidc-login`: the ID token verified against the provider's keys, its audience this
//! client, its nonce this flow's), finds or makes the account, applies the group mapping and
//! opens a session. A flow the CLI started (`ramen login --sso`) ends instead at the CLI's
//! loopback with a one-time code, which only the holder of the CLI's own PKCE verifier can
//! redeem ([`Auth::redeem_sso_code`]): a code read off the loopback by another local process is
//! worth nothing without it.
//!
//! Accounts: an identity is `<issuer> <subject>`. Its first sign-in makes an account for its
//! email, or links the existing account of that email when the provider vouches for the email
//! (`email_verified`) or the operator says to trust it (`sso.trust_email`); otherwise it is
//! refused, naming the email, because anyone can put any email into some providers' profiles.

use std::collections::BTreeMap;
use std::sync::Arc;

use ramen_access::Caller;
use ramen_config::{Config, SsoMembership};
use ramen_oidc_login::{Client, ClientConfig, Identity, OidcError, challenge, random_token};
use ramen_store::{Filter, StoreError, Versioned};
use subtle::ConstantTimeEq;

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{
    MembershipRecord, Role, SsoCodeRecord, SsoFlowRecord, UserRecord, membership_id, now_ms,
};
use crate::sessions::Session;
use crate::{Auth, validate};

/// How long a person may take at the provider.
const FLOW_TTL_MS: i64 = 10 * 60 * 1000;
/// How long the CLI has to redeem its code (it does so at once).
const CODE_TTL_MS: i64 = 2 * 60 * 1000;

/// What the platform's `sso.*` settings say, read once at start.
pub(crate) struct SsoSettings {
    client: Option<Client>,
    button: String,
    password_sign_in: bool,
    super_admin_groups: Vec<String>,
    memberships: Vec<SsoMembership>,
    trust_email: bool,
}

impl SsoSettings {
    pub(crate) fn from_config(config: &Config) -> Arc<Self> {
        let sso = &config.sso;
        let client = sso.enabled().then(|| {
            let secret = sso.client_secret.expose().trim();
            Client::new(ClientConfig {
                issuer: sso.issuer.trim().to_owned(),
                client_id: sso.client_id.trim().to_owned(),
                client_secret: (!secret.is_empty()).then(|| secret.to_owned()),
                scopes: sso.scopes(),
                redirect_uri: sso.redirect_uri(config.listen.api),
                groups_claim: sso.groups_claim.trim().to_owned(),
            })
        });
        Arc::new(Self {
            client,
            button: sso.button(),
            password_sign_in: sso.password_sign_in,
            super_admin_groups: sso.super_admin_groups(),
            // Checked when the config was loaded.
            memberships: sso.memberships().unwrap_or_default(),
            trust_email: sso.trust_email,
        })
    }

    pub(crate) fn password_sign_in(&self) -> Result<(), AuthError> {
        if self.password_sign_in {
            Ok(())
        } else {
            Err(AuthError::Denied(
                "password sign-in is turned off on this platform: sign in with single sign-on \
                 (the console's button, or `ramen login --sso`)"
                    .into(),
            ))
        }
    }
}

/// How people may sign in here.
pub struct SignInOptions {
    pub sso_enabled: bool,
    pub sso_button: String,
    pub password_sign_in: bool,
}

/// The start of a sign-in: where to send the browser, and the state to bind to it.
pub struct SsoStart {
    pub authorization_url: String,
    pub state: String,
}

/// How a callback ends.
pub enum SsoFinish {
    /// A console sign-in: the session, and the path to land on.
    Console { session: Box<Session>, next: String },
    /// A console sign-in that failed: why, for the sign-in page.
    ConsoleFailed { error: String },
    /// A CLI sign-in: its loopback, with a one-time code or the error in the query.
    Cli { redirect: String },
}

/// The provider's callback, as it came.
pub struct Callback<'a> {
    pub state: &'a str,
    pub code: &'a str,
    pub iss: &'a str,
    pub error: &'a str,
    pub error_description: &'a str,
}

/// Flows and CLI codes are kept under the hash of their secret, as refresh tokens are.
fn digest(secret: &str) -> String {
    crate::refresh::hash(secret)
}

fn oidc_error(error: OidcError) -> AuthError {
    match error {
        OidcError::Provider { .. } => AuthError::Unavailable(error.to_string()),
        OidcError::Refused { .. } | OidcError::IdToken(_) => {
            AuthError::Unauthenticated(error.to_string())
        }
    }
}

impl Auth {
    pub fn sign_in_options(&self) -> SignInOptions {
        SignInOptions {
            sso_enabled: self.sso.client.is_some(),
            sso_button: self.sso.button.clone(),
            password_sign_in: self.sso.password_sign_in,
        }
    }

    fn sso_client(&self) -> Result<&Client, AuthError> {
        self.sso.client.as_ref().ok_or_else(|| {
            AuthError::NotConfigured("single sign-on is not configured on this platform".into())
        })
    }

    /// The authorization request of a console sign-in (`cli` = `None`, landing on `next`) or
    /// of `ramen login --sso` (its loopback port and PKCE challenge).
    pub async fn start_sso(
        &self,
        next: &str,
        cli: Option<(u16, String)>,
    ) -> Result<SsoStart, AuthError> {
        let client = self.sso_client()?;
        if let Some((port, challenge)) = &cli {
            if *port == 0 {
                return Err(AuthError::invalid("cli_port", "must be a port number"));
            }
            let base64url =
                challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if challenge.len() != 43 || !base64url {
                return Err(AuthError::invalid(
                    "code_challenge",
                    "must be the S256 challenge of the CLI's verifier (43 base64url characters)",
                ));
            }
        }
        let begun = client.begin().await.map_err(oidc_error)?;
        let record = SsoFlowRecord {
            nonce: begun.nonce,
            verifier: begun.verifier,
            next: ramen_service::validate::same_origin_path(next),
            cli_port: cli.as_ref().map(|(port, _)| *port),
            cli_challenge: cli.map(|(_, challenge)| challenge),
            expires_at_ms: now_ms() + FLOW_TTL_MS,
        };
        self.db.sso_flows.insert(&digest(&begun.state), &record).await?;
        Ok(SsoStart { authorization_url: begun.authorization_url, state: begun.state })
    }

    /// The provider's callback: the flow is taken (once), the code redeemed, the person signed
    /// in. Only a state that is unknown, used or expired is an error here; everything after
    /// that ends where the flow said (the console's sign-in page, or the CLI).
    pub async fn finish_sso(
        &self,
        caller: &Caller,
        callback: Callback<'_>,
    ) -> Result<SsoFinish, AuthError> {
        let client = self.sso_client()?;
        let flow = self.take_flow(callback.state).await?;
        let result = async {
            if !callback.error.is_empty() {
                let description = (!callback.error_description.is_empty())
                    .then(|| callback.error_description.to_owned());
                return Err(oidc_error(OidcError::Refused {
                    error: callback.error.into(),
                    description,
                }));
            }
            if callback.code.is_empty() {
                return Err(AuthError::invalid("code", "the provider sent no code"));
            }
            client.check_callback_issuer(Some(callback.iss)).await.map_err(oidc_error)?;
            let identity = client
                .finish(callback.code, &flow.verifier, &flow.nonce)
                .await
                .map_err(oidc_error)?;
            self.sso_account(identity).await
        }
        .await;
        let (actor, target, extra) = match &result {
            Ok((user, changes)) => (
                Caller::new(user.id.clone(), caller.request_id.clone()),
                format!("user/{}", user.value.email),
                changes.clone(),
            ),
            Err(_) => (caller.clone(), "user/".into(), details([])),
        };
        let via = if flow.cli_port.is_some() { "cli" } else { "console" };
        let mut extra = extra;
        extra.insert("via".into(), via.into());
        let result = self.audited(&actor, "session.sso_login", "", &target, extra, result).await;
        match (flow.cli_port, flow.cli_challenge) {
            (Some(port), Some(challenge)) => {
                let loopback = format!("http://127.0.0.1:{port}/callback");
                let query = match result {
                    Ok((user, _)) => {
                        let code = random_token();
                        let record = SsoCodeRecord {
                            user_id: user.id,
                            challenge,
                            expires_at_ms: now_ms() + CODE_TTL_MS,
                        };
                        self.db.sso_codes.insert(&digest(&code), &record).await?;
                        ramen_oidc_login::url_form(&[("code", &code)])
                    }
                    Err(error) => ramen_oidc_login::url_form(&[("error", &error.to_string())]),
                };
                Ok(SsoFinish::Cli { redirect: format!("{loopback}?{query}") })
            }
            _ => match result {
                Ok((user, _)) => {
                    let session = self.open_session(user, None).await?;
                    Ok(SsoFinish::Console { session: Box::new(session), next: flow.next })
                }
                Err(error) => Ok(SsoFinish::ConsoleFailed { error: error.to_string() }),
            },
        }
    }

    /// The CLI's one-time code, redeemed once with the verifier of the challenge it started
    /// with. A wrong verifier spends the code too.
    pub async fn redeem_sso_code(&self, code: &str, verifier: &str) -> Result<Session, AuthError> {
        self.sso_client()?;
        let unknown = || {
            AuthError::Unauthenticated(
                "this sign-in code is unknown, already used or expired: run `ramen login --sso` again"
                    .into(),
            )
        };
        let id = digest(code);
        let record = self.db.sso_codes.get(&id).await?.ok_or_else(unknown)?;
        if !self.db.sso_codes.delete(&id, Some(record.version)).await? {
            return Err(unknown());
        }
        if record.value.expires_at_ms < now_ms() {
            return Err(unknown());
        }
        if !bool::from(challenge(verifier).as_bytes().ct_eq(record.value.challenge.as_bytes())) {
            return Err(AuthError::Unauthenticated(
                "the code verifier is not the one this sign-in started with".into(),
            ));
        }
        let user = self.db.users.get(&record.value.user_id).await?;
        let user = user.ok_or_else(|| AuthError::Unauthenticated("the account is gone".into()))?;
        self.open_session(user, None).await
    }

    /// The flow of `state`, removed so that it serves once.
    async fn take_flow(&self, state: &str) -> Result<SsoFlowRecord, AuthError> {
        let unknown = || {
            AuthError::invalid(
                "state",
                "this sign-in is unknown, already used or expired: start it again",
            )
        };
        if state.is_empty() {
            return Err(unknown());
        }
        let id = digest(state);
        let flow = self.db.sso_flows.get(&id).await?.ok_or_else(unknown)?;
        if !self.db.sso_flows.delete(&id, Some(flow.version)).await? {
            return Err(unknown());
        }
        if flow.value.expires_at_ms < now_ms() {
            return Err(unknown());
        }
        Ok(flow.value)
    }

    /// The account of `identity` (found, linked or made), with the group mapping applied;
    /// also what the mapping changed, for the audit entry.
    async fn sso_account(
        &self,
        identity: Identity,
    ) -> Result<(Versioned<UserRecord>, BTreeMap<String, String>), AuthError> {
        let sso_id = format!("{} {}", identity.issuer, identity.subject);
        let found = self.db.users.find_one(Filter::new().eq("sso_id", sso_id.as_str())).await?;
        let user = match found {
            Some(user) => user,
            None => self.link_or_create(&identity, &sso_id).await?,
        };
        // No groups claim at all (Entra ID past 200 groups, a provider that sends none): what
        // the mapping gave stays as it was, rather than everything being taken back.
        let Some(groups) = identity.groups.as_deref() else {
            tracing::warn!(
                issuer = %identity.issuer,
                "the identity provider sent no groups claim: roles from sso.* mappings left as they were"
            );
            let user = self.record_login(&user.id).await?;
            let changes = details([("groups", "no groups claim: mapping not applied".into())]);
            return Ok((user, changes));
        };
        let admin = groups.iter().any(|g| self.sso.super_admin_groups.contains(g));
        let now = now_ms();
        let (user, admin_change) = self
            .db
            .users
            .modify(&user.id, |u| {
                let change = match (admin, u.super_admin, u.sso_super_admin) {
                    (true, false, _) => Some("granted"),
                    (false, true, true) => Some("taken away"),
                    _ => None,
                };
                if admin && !u.super_admin {
                    u.super_admin = true;
                    u.sso_super_admin = true;
                } else if !admin && u.sso_super_admin {
                    u.super_admin = false;
                    u.sso_super_admin = false;
                }
                u.last_login_at_ms = Some(now);
                Ok::<_, StoreError>(change)
            })
            .await?;
        let mut changes = self.sync_memberships(&user.id, groups).await?;
        if let Some(change) = admin_change {
            changes.insert("super_admin".into(), change.into());
        }
        Ok((user, changes))
    }

    async fn link_or_create(
        &self,
        identity: &Identity,
        sso_id: &str,
    ) -> Result<Versioned<UserRecord>, AuthError> {
        let email = identity.email.as_deref().ok_or_else(|| {
            AuthError::Unauthenticated(
                "the identity provider sent no email for this person: ask for the `email` scope \
                 (sso.scopes)"
                    .into(),
            )
        })?;
        let email = validate::email(email)?;
        if let Some(existing) =
            self.db.users.find_one(Filter::new().eq("email", email.as_str())).await?
        {
            if existing.value.sso_id.is_some() {
                return Err(AuthError::Unauthenticated(format!(
                    "the account {email} signs in with another identity of the provider"
                )));
            }
            if !(identity.email_verified || self.sso.trust_email) {
                return Err(AuthError::Unauthenticated(format!(
                    "an account with the email {email} exists and the identity provider does \
                     not vouch for that email (no email_verified): it is not linked; an operator \
                     who knows the provider verifies emails sets sso.trust_email"
                )));
            }
            let (linked, ()) = self
                .db
                .users
                .modify(&existing.id, |u| {
                    u.sso_id = Some(sso_id.to_owned());
                    // A one-time password not used yet is void once the person has proved who
                    // they are another way.
                    if u.must_change_password {
                        u.must_change_password = false;
                        u.password_hash.clear();
                    }
                    Ok::<_, StoreError>(())
                })
                .await?;
            return Ok(linked);
        }
        let now = now_ms();
        let record = UserRecord {
            email: email.clone(),
            // No password: this account signs in through the provider only.
            password_hash: String::new(),
            super_admin: false,
            must_change_password: false,
            bootstrap: false,
            created_at_ms: now,
            updated_at_ms: now,
            last_login_at_ms: None,
            sso_id: Some(sso_id.to_owned()),
            sso_super_admin: false,
        };
        let id = self.id_for_new_account(&email).await?;
        match self.db.users.insert(&id, &record).await {
            Ok(version) => {
                self.account_created(&email).await;
                Ok(Versioned { id, version, value: record })
            }
            // Made meanwhile (the same person signing in twice at once): the next sign-in
            // finds it.
            Err(StoreError::UniqueViolation { .. }) => Err(AuthError::Conflict(format!(
                "the account {email} was being created meanwhile: sign in again"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Memberships by `sso.memberships`: those the person's groups match are given (the higher
    /// role where two entries name one group), those single sign-on gave before and no longer
    /// matched are taken back; memberships made by hand are left as they are.
    async fn sync_memberships(
        &self,
        user_id: &str,
        groups: &[String],
    ) -> Result<BTreeMap<String, String>, AuthError> {
        let mut wanted: BTreeMap<&str, Role> = BTreeMap::new();
        for entry in self.sso.memberships.iter().filter(|m| groups.contains(&m.provider_group)) {
            let role = if entry.role == "admin" { Role::Admin } else { Role::Member };
            let slot = wanted.entry(entry.group.as_str()).or_insert(role);
            if role == Role::Admin {
                *slot = Role::Admin;
            }
        }
        let mut changes = BTreeMap::new();
        for (group, role) in &wanted {
            if self.db.groups.get(group).await?.is_none() {
                tracing::warn!(group, "sso.memberships names a group that does not exist; skipped");
                continue;
            }
            let id = membership_id(group, user_id);
            let existing = self.db.memberships.get(&id).await?;
            let current = existing.as_ref().map(|m| (m.value.role, m.value.from_sso));
            match current {
                // Made by hand, or already as wanted.
                Some((_, false)) => continue,
                Some((have, true)) if have == *role => continue,
                _ => {}
            }
            let record = MembershipRecord {
                group: (*group).to_owned(),
                user_id: user_id.to_owned(),
                role: *role,
                created_at_ms: existing.map_or_else(now_ms, |m| m.value.created_at_ms),
                from_sso: true,
            };
            self.db.memberships.put(&id, &record).await?;
            let word = if *role == Role::Admin { "admin" } else { "member" };
            changes.insert(format!("member:{group}"), word.into());
        }
        for old in self.memberships_of(user_id).await? {
            if old.from_sso && !wanted.contains_key(old.group.as_str()) {
                self.db.memberships.delete(&membership_id(&old.group, user_id), None).await?;
                changes.insert(format!("member:{}", old.group), "removed".into());
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use ramen_service::validate::same_origin_path as safe_next;

    #[test]
    fn next_stays_on_this_origin() {
        assert_eq!(safe_next("/groups/payments"), "/groups/payments");
        for unsafe_next in ["//evil.example", "/\\evil.example", "https://evil.example", ""] {
            assert_eq!(safe_next(unsafe_next), "/", "{unsafe_next}");
        }
    }
}
