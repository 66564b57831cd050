//! Who may do what. One pure rule, [`decide`], used by every service for its own RPCs and by
//! auth's `Authorize` (what the api-gateway asks for each REST call):
//! - super admin: everything;
//! - group admin: the admin actions of their own groups (environments, deploys, zone actions,
//!   keys, secrets, members, service-account rules);
//! - member: read their groups;
//! - anyone else: nothing about a group, not even whether it exists (NOT_FOUND, not DENY);
//! - a group that does not exist is NOT_FOUND for everyone;
//! - a user holding a one-time password may do nothing until it is changed.

pub use ramen_proto::auth::v1::{Action, Decision};
use serde::{Deserialize, Serialize};

/// A member's role in a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Member,
}

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

/// What an action is, in a refusal's words.
pub fn describe(action: Action) -> &'static str {
    match need(action) {
        Some((Need::Admin, _)) => "do this: it needs a group admin",
        Some((Need::SuperAdmin, _)) => "do this: it needs a super admin",
        _ => "do this",
    }
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
