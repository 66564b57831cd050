//! Who may do what. One pure rule ([`decide`]) answers `Authorize` for the other services and
//! guards every auth RPC ([`Auth::require`]):
//! - super admin: everything;
//! - group admin: the admin actions of their own groups (environments, deploys, zone actions,
//!   keys, secrets, members, service-account rules);
//! - member: read their groups;
//! - anyone else: nothing about a group, not even whether it exists (NOT_FOUND, not DENY);
//! - a group that was never registered is NOT_FOUND for everyone;
//! - a user holding a one-time password may do nothing until it is changed.

use ramen_proto::auth::v1::{Action, Decision};
use ramen_store::Versioned;

use crate::Auth;
use crate::context::Ctx;
use crate::error::AuthError;
use crate::model::{Role, UserRecord, membership_id};

/// The least a caller must be for an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Member,
    Admin,
    SuperAdmin,
}

/// The role an action needs, and whether it is about one group.
pub fn need(action: Action) -> Option<(Need, bool)> {
    use Action::*;
    Some(match action {
        Unspecified => return None,
        ReadGroup => (Need::Member, true),
        ManageEnvironments | Deploy | ZoneActions | ManageKeys | ManageSecrets | ManageMembers
        | ManageServiceAccount => (Need::Admin, true),
        ManageGroup | SetSize => (Need::SuperAdmin, true),
        CreateGroup | ManageZones | Admin => (Need::SuperAdmin, false),
    })
}

/// What a user holds, as far as the rule cares.
#[derive(Clone, Copy, Debug, Default)]
pub struct Standing {
    pub super_admin: bool,
    pub must_change_password: bool,
    pub group_exists: bool,
    pub role: Option<Role>,
}

pub fn decide(standing: Standing, action: Action) -> Decision {
    let Some((need, scoped)) = need(action) else { return Decision::Deny };
    if scoped && !standing.group_exists {
        return Decision::NotFound;
    }
    if standing.super_admin {
        return if standing.must_change_password { Decision::Deny } else { Decision::Allow };
    }
    if !scoped {
        return Decision::Deny;
    }
    let Some(role) = standing.role else { return Decision::NotFound };
    let allowed = match need {
        Need::Member => true,
        Need::Admin => role == Role::Admin,
        Need::SuperAdmin => false,
    };
    if allowed && !standing.must_change_password { Decision::Allow } else { Decision::Deny }
}

/// The resolved caller of an RPC.
pub enum Caller {
    Service(&'static str),
    User(Versioned<UserRecord>),
}

impl Caller {
    pub fn id(&self) -> &str {
        match self {
            Caller::Service(name) => name,
            Caller::User(user) => &user.id,
        }
    }

    pub fn is_super_admin(&self) -> bool {
        match self {
            Caller::Service(_) => true,
            Caller::User(user) => user.value.super_admin && !user.value.must_change_password,
        }
    }
}

impl Auth {
    /// The caller named by the request's metadata; UNAUTHENTICATED when it names nobody.
    pub(crate) async fn caller(&self, ctx: &Ctx) -> Result<Caller, AuthError> {
        if let Some(service) = ctx.service() {
            return Ok(Caller::Service(service));
        }
        if ctx.actor.is_empty() {
            return Err(AuthError::Unauthenticated("no caller identity (x-ramen-actor)".into()));
        }
        match self.db.users.get(&ctx.actor).await? {
            Some(user) => Ok(Caller::User(user)),
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
        ctx: &Ctx,
        group: &str,
        action: Action,
    ) -> Result<Caller, AuthError> {
        let caller = self.caller(ctx).await?;
        let scoped = need(action).is_some_and(|(_, scoped)| scoped);
        let decision = match &caller {
            Caller::Service(_) if scoped && self.db.groups.get(group).await?.is_none() => {
                Decision::NotFound
            }
            Caller::Service(_) => Decision::Allow,
            Caller::User(user) => {
                decide(self.standing(&user.value, &user.id, group).await?, action)
            }
        };
        match decision {
            Decision::Allow => Ok(caller),
            Decision::NotFound => Err(AuthError::group_not_found(group)),
            _ => match &caller {
                Caller::User(user) if user.value.must_change_password => {
                    Err(AuthError::PasswordChangeRequired)
                }
                _ => Err(AuthError::Denied(format!("not allowed to {}", describe(action)))),
            },
        }
    }
}

fn describe(action: Action) -> &'static str {
    match need(action) {
        Some((Need::Admin, _)) => "do this: it needs a group admin",
        Some((Need::SuperAdmin, _)) => "do this: it needs a super admin",
        _ => "do this",
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
