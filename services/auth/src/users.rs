//! Users (super admins manage them; a user may read themselves).

use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_store::{Filter, Query, StoreError, Versioned};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{MembershipRecord, UserRecord, now_ms};
use crate::sessions::hash_password;
use crate::{Auth, paging, password, validate};
use ramen_access::Caller;

pub struct NewUser {
    pub user: Versioned<UserRecord>,
    /// Set when the request had no password: shown once, must be changed at first login.
    pub one_time_password: Option<String>,
}

impl Auth {
    pub async fn create_user(
        &self,
        caller: &Caller,
        email: &str,
        password: &str,
        super_admin: bool,
    ) -> Result<NewUser, AuthError> {
        let result = async {
            self.require(caller, "", Action::Admin).await?;
            self.insert_user(email, password, super_admin, false).await
        }
        .await;
        let target = format!("user/{}", email.trim().to_ascii_lowercase());
        let extra = details([("super_admin", super_admin.to_string())]);
        self.audited(caller, "user.create", "", &target, extra, result).await
    }

    /// Stores a new user; an empty password means a generated one-time password.
    pub(crate) async fn insert_user(
        &self,
        email: &str,
        password: &str,
        super_admin: bool,
        bootstrap: bool,
    ) -> Result<NewUser, AuthError> {
        let email = validate::email(email)?;
        let (password, one_time) = if password.is_empty() {
            let otp = password::generate_one_time();
            (otp.clone(), Some(otp))
        } else {
            password::check_new(password)
                .map_err(|reason| AuthError::invalid("password", reason))?;
            (password.to_owned(), None)
        };
        let now = now_ms();
        let record = UserRecord {
            email: email.clone(),
            password_hash: hash_password(&password).await?,
            super_admin,
            must_change_password: one_time.is_some(),
            bootstrap,
            created_at_ms: now,
            updated_at_ms: now,
            last_login_at_ms: None,
            sso_id: None,
            sso_super_admin: false,
        };
        // Memberships a group admin made for this email before it had an account hold now.
        let id = self.id_for_new_account(&email).await?;
        match self.db.users.insert(&id, &record).await {
            Ok(version) => {
                self.account_created(&email).await;
                Ok(NewUser {
                    user: Versioned { id, version, value: record },
                    one_time_password: one_time,
                })
            }
            Err(StoreError::UniqueViolation { .. }) => {
                Err(AuthError::AlreadyExists(format!("user `{email}`")))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_users(
        &self,
        caller: &Caller,
        page: Option<&PageRequest>,
        email_prefix: &str,
    ) -> Result<(Vec<Versioned<UserRecord>>, PageInfo), AuthError> {
        self.require(caller, "", Action::Admin).await?;
        let page = paging::parse(page)?;
        let mut query = Query::new().sort_asc("email").skip(page.offset).limit(page.probe());
        let prefix = email_prefix.trim().to_ascii_lowercase();
        if !prefix.is_empty() {
            query = query.gte("email", prefix.as_str()).lt("email", format!("{prefix}\u{10FFFF}"));
        }
        let mut users = self.db.users.find(&query).await?;
        let info = page.finish(&mut users);
        Ok((users, info))
    }

    /// A user and their memberships: super admins, or the user themselves.
    pub async fn get_user(
        &self,
        caller: &Caller,
        user_id: &str,
    ) -> Result<(Versioned<UserRecord>, Vec<MembershipRecord>), AuthError> {
        if caller.actor != user_id {
            self.require(caller, "", Action::Admin).await?;
        }
        let user = self
            .db
            .users
            .get(user_id)
            .await?
            .ok_or_else(|| AuthError::NotFound(format!("user `{user_id}`")))?;
        let memberships = self
            .db
            .memberships
            .find(&Query::new().eq("user_id", user_id).sort_asc("group"))
            .await?;
        Ok((user, memberships.into_iter().map(|m| m.value).collect()))
    }

    pub async fn delete_user(&self, caller: &Caller, user_id: &str) -> Result<(), AuthError> {
        let result = async {
            self.require(caller, "", Action::Admin).await?;
            let Some(user) = self.db.users.get(user_id).await? else { return Ok(()) };
            if user.value.super_admin {
                self.keep_a_super_admin().await?;
            }
            self.db.memberships.delete_many(&Filter::new().eq("user_id", user_id)).await?;
            self.revoke_user_sessions(user_id).await?;
            self.db.users.delete(user_id, None).await?;
            Ok(())
        }
        .await;
        self.audited(caller, "user.delete", "", &format!("user/{user_id}"), details([]), result)
            .await
    }

    pub async fn set_super_admin(
        &self,
        caller: &Caller,
        user_id: &str,
        super_admin: bool,
    ) -> Result<Versioned<UserRecord>, AuthError> {
        let result = async {
            self.require(caller, "", Action::Admin).await?;
            let target = self.db.users.get(user_id).await?;
            if !super_admin && target.is_some_and(|t| t.value.super_admin) {
                self.keep_a_super_admin().await?;
            }
            let now = now_ms();
            let change = |u: &mut UserRecord| {
                u.super_admin = super_admin;
                u.updated_at_ms = now;
                Ok::<_, AuthError>(())
            };
            match self.db.users.modify(user_id, change).await {
                Ok((user, ())) => Ok(user),
                Err(AuthError::Store(StoreError::NotFound { .. })) => {
                    Err(AuthError::NotFound(format!("user `{user_id}`")))
                }
                Err(e) => Err(e),
            }
        }
        .await;
        let extra = details([("super_admin", super_admin.to_string())]);
        self.audited(caller, "user.set_super_admin", "", &format!("user/{user_id}"), extra, result)
            .await
    }

    /// Refuses to remove the last super admin (nobody could manage users any more).
    async fn keep_a_super_admin(&self) -> Result<(), AuthError> {
        if self.db.users.count(&Filter::new().eq("super_admin", true)).await? <= 1 {
            return Err(AuthError::Conflict(
                "the last super admin cannot be removed or demoted".into(),
            ));
        }
        Ok(())
    }
}
