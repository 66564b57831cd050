//! The first super admin. On the first boot of an empty user collection with
//! `RAMEN_BOOTSTRAP_ADMIN_EMAIL` set (local mode: always, `admin@ramen.local` by default), a
//! super admin is created with a one-time password, printed once in the log and handed to the
//! caller of `start` (so `ramen up` shows it). Logging in with it yields a session that may only
//! change the password; once changed, the one-time password never works again.

use std::fmt;

use ramen_config::{Config, Mode};
use ramen_store::Filter;

use crate::Auth;
use crate::audit::details;
use crate::error::AuthError;
use ramen_access::Caller;

pub const LOCAL_DEFAULT_EMAIL: &str = "admin@ramen.local";

/// The bootstrap credentials. `Debug` hides the password.
#[derive(Clone)]
pub struct BootstrapAdmin {
    pub email: String,
    password: String,
}

impl BootstrapAdmin {
    /// The one-time password, for showing to the operator once.
    pub fn one_time_password(&self) -> &str {
        &self.password
    }
}

impl fmt::Debug for BootstrapAdmin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BootstrapAdmin")
            .field("email", &self.email)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The email to bootstrap with, if any.
pub fn bootstrap_email(config: &Config) -> Option<String> {
    // Nobody could use a one-time password: super admins come from sso.super_admin_groups.
    if !config.sso.password_sign_in {
        return None;
    }
    let configured = config.auth.bootstrap_admin_email.trim();
    match (configured.is_empty(), config.mode) {
        (false, _) => Some(configured.to_owned()),
        (true, Mode::Local) => Some(LOCAL_DEFAULT_EMAIL.to_owned()),
        (true, Mode::Cloud) => None,
    }
}

impl Auth {
    /// Creates the bootstrap admin when there is no user yet. `None` when users exist (or
    /// another replica won the race: the email is unique).
    pub async fn bootstrap(
        &self,
        email: Option<String>,
    ) -> Result<Option<BootstrapAdmin>, AuthError> {
        let Some(email) = email else { return Ok(None) };
        if self.db.users.count(&Filter::new()).await? > 0 {
            return Ok(None);
        }
        let created = match self.insert_user(&email, "", true, true).await {
            Ok(created) => created,
            Err(AuthError::AlreadyExists(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let password = created.one_time_password.unwrap_or_default();
        let caller = Caller::new("bootstrap", "");
        let target = format!("user/{}", created.user.id);
        self.audited(
            &caller,
            "user.bootstrap",
            "",
            &target,
            details([("email", created.user.value.email.clone())]),
            Ok(()),
        )
        .await?;
        tracing::warn!(
            email = %created.user.value.email,
            one_time_password = %password,
            "bootstrap super admin created: sign in with this one-time password and change it; it is not shown again"
        );
        Ok(Some(BootstrapAdmin { email: created.user.value.email, password }))
    }

    /// (any user exists, the bootstrap admin still holds its one-time password).
    pub async fn bootstrap_status(&self) -> Result<(bool, bool), AuthError> {
        let has_users = self.db.users.count(&Filter::new()).await? > 0;
        let pending = Filter::new().eq("bootstrap", true).eq("must_change_password", true);
        Ok((has_users, self.db.users.count(&pending).await? > 0))
    }
}
