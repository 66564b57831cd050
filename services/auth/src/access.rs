//! Auth's own RPCs, guarded by the one rule every service applies (`ramen_access::decide`).
//! Auth holds the memberships, so it reads the caller's standing from its store rather than
//! from the ticket (the ticket's grants were read from that same store for this request).

use ramen_access::rule::describe;
use ramen_access::{Caller, Standing, decide, need};
use ramen_proto::auth::v1::{Action, Decision};
use ramen_store::Versioned;

use crate::Auth;
use crate::error::AuthError;
use crate::model::{UserRecord, membership_id};

/// The caller of an RPC, resolved against auth's store.
pub enum Principal {
    Service(&'static str),
    User(Versioned<UserRecord>),
}

impl Principal {
    pub fn id(&self) -> &str {
        match self {
            Principal::Service(name) => name,
            Principal::User(user) => &user.id,
        }
    }

    pub fn is_super_admin(&self) -> bool {
        match self {
            Principal::Service(_) => true,
            Principal::User(user) => user.value.super_admin && !user.value.must_change_password,
        }
    }
}

impl Auth {
    /// The caller named by the request's metadata; UNAUTHENTICATED when it names nobody.
    pub(crate) async fn principal(&self, caller: &Caller) -> Result<Principal, AuthError> {
        if let Some(service) = caller.service() {
            return Ok(Principal::Service(service));
        }
        if caller.actor.is_empty() {
            return Err(AuthError::Unauthenticated("no caller identity (x-ramen-caller)".into()));
        }
        match self.db.users.get(&caller.actor).await? {
            Some(user) => Ok(Principal::User(user)),
            None => Err(AuthError::Unauthenticated("the calling user no longer exists".into())),
        }
    }

    /// What `user` holds for `group` (empty for global actions).
    pub(crate) async fn standing(
        &self,
        user: &UserRecord,
        user_id: &str,
        group: &str,
    ) -> Result<Standing, AuthError> {
        let mut standing = Standing {
            super_admin: user.super_admin,
            must_change_password: user.must_change_password,
            ..Standing::default()
        };
        if !group.is_empty() {
            standing.group_exists = self.db.groups.get(group).await?.is_some();
            if standing.group_exists {
                let membership = self.db.memberships.get(&membership_id(group, user_id)).await?;
                standing.role = membership.map(|m| m.value.role);
            }
        }
        Ok(standing)
    }

    /// Guards an RPC: the caller may do `action` on `group`, or the matching error.
    pub(crate) async fn require(
        &self,
        caller: &Caller,
        group: &str,
        action: Action,
    ) -> Result<Principal, AuthError> {
        let principal = self.principal(caller).await?;
        let scoped = need(action).is_some_and(|(_, scoped)| scoped);
        let decision = match &principal {
            Principal::Service(_) if scoped && self.db.groups.get(group).await?.is_none() => {
                Decision::NotFound
            }
            Principal::Service(_) => Decision::Allow,
            Principal::User(user) => {
                decide(self.standing(&user.value, &user.id, group).await?, action)
            }
        };
        match decision {
            Decision::Allow => Ok(principal),
            Decision::NotFound => Err(AuthError::group_not_found(group)),
            _ => match &principal {
                Principal::User(user) if user.value.must_change_password => {
                    Err(AuthError::PasswordChangeRequired)
                }
                _ => Err(AuthError::Denied(format!("not allowed to {}", describe(action)))),
            },
        }
    }
}
