//! The caller of an RPC: who it is, what they hold, and the request it belongs to. Read from
//! the verified ticket (the serving layer puts it in the request's extensions) and carried on
//! to the next service by [`Caller::request`], whose client layer signs it again.

use std::collections::BTreeMap;

use ramen_proto::auth::v1::{Action, Decision};
use ramen_proto::metadata;
use serde::{Deserialize, Serialize};

use crate::rule::{Role, Standing, decide, describe};

/// Services that act on their own behalf. They may do anything: only the control plane holds
/// the key their tickets are signed with.
pub const SERVICE_ACTORS: &[&str] = &[
    metadata::ACTOR_SCHEDULER,
    metadata::ACTOR_DEPLOYER,
    metadata::ACTOR_ZONE_MANAGER,
    metadata::ACTOR_EDGE,
    metadata::ACTOR_REBALANCER,
];

/// What a user holds, as auth answered when the api-gateway authorized the request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    #[serde(default, skip_serializing_if = "is_false")]
    pub super_admin: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub must_change_password: bool,
    /// Group → role, for every group the user is a member of.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, Role>,
}

fn is_false(value: &bool) -> bool {
    !value
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// User id or service actor; empty for an anonymous call (login, bootstrap status).
    pub actor: String,
    /// Empty when the call has none.
    pub request_id: String,
    /// A user's grants; empty for services and anonymous calls.
    pub grants: Grants,
}

/// Why [`Caller::require`] refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not learn whether the group exists.
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Denied(String),
    /// The user must change their one-time password first.
    #[error("the one-time password must be changed first")]
    PasswordChangeRequired,
}

impl From<Refusal> for tonic::Status {
    fn from(refusal: Refusal) -> Self {
        let message = refusal.to_string();
        match refusal {
            Refusal::Unauthenticated(_) => tonic::Status::unauthenticated(message),
            Refusal::NotFound(_) => tonic::Status::not_found(message),
            Refusal::Denied(_) => tonic::Status::permission_denied(message),
            Refusal::PasswordChangeRequired => metadata::ErrorReason::PasswordChangeRequired
                .attach(tonic::Status::failed_precondition(message)),
        }
    }
}

impl Caller {
    pub fn new(actor: impl Into<String>, request_id: impl Into<String>) -> Self {
        Self { actor: actor.into(), request_id: request_id.into(), grants: Grants::default() }
    }

    /// A user with what they hold.
    pub fn user(actor: impl Into<String>, request_id: impl Into<String>, grants: Grants) -> Self {
        Self { grants, ..Self::new(actor, request_id) }
    }

    /// A service acting on its own (a job, a saga, a scheduled run): `actor` is one of
    /// [`SERVICE_ACTORS`].
    pub fn acting_as(actor: &'static str) -> Self {
        Self::new(actor, "")
    }

    /// The same request, now made by a service on its own behalf (the request id is kept, so
    /// the audit log still ties the work to the call that caused it).
    pub fn as_service(&self, actor: &'static str) -> Self {
        Self::new(actor, self.request_id.clone())
    }

    /// The caller the serving layer verified for this request; anonymous when none was put
    /// there (a request that did not come through the verifying layer).
    pub fn from_request<T>(request: &tonic::Request<T>) -> Self {
        request.extensions().get::<Self>().cloned().unwrap_or_default()
    }

    /// [`Caller::from_request`], with `fallback` as the actor when the ticket names none (the
    /// zone-manager and the rebalancer audit such calls as `unknown`).
    pub fn from_request_or<T>(request: &tonic::Request<T>, fallback: &str) -> Self {
        let mut caller = Self::from_request(request);
        if caller.actor.is_empty() {
            caller.actor = fallback.to_owned();
        }
        caller
    }

    /// The service this caller is, when it is one of [`SERVICE_ACTORS`].
    pub fn service(&self) -> Option<&'static str> {
        SERVICE_ACTORS.iter().copied().find(|s| *s == self.actor)
    }

    /// The actor as recorded in the audit log (`anonymous` for calls without one: login).
    pub fn audit_actor(&self) -> &str {
        if self.actor.is_empty() { "anonymous" } else { &self.actor }
    }

    /// The one rule applied to this caller for `action` on `group` (empty for global
    /// actions). Whether the group exists is for the service that owns it to say: a missing
    /// group is its NOT_FOUND, the same answer a stranger gets.
    pub fn decide(&self, group: &str, action: Action) -> Decision {
        if self.service().is_some() {
            return Decision::Allow;
        }
        let standing = Standing {
            super_admin: self.grants.super_admin,
            must_change_password: self.grants.must_change_password,
            group_exists: true,
            role: self.grants.groups.get(group).copied(),
        };
        decide(standing, action)
    }

    /// [`Caller::decide`] as a result, with the refusal in words a caller can act on.
    pub fn require(&self, group: &str, action: Action) -> Result<(), Refusal> {
        if self.actor.is_empty() {
            return Err(Refusal::Unauthenticated("sign in first: the call names no caller".into()));
        }
        match self.decide(group, action) {
            Decision::Allow => Ok(()),
            Decision::NotFound => Err(Refusal::NotFound(format!("group `{group}` not found"))),
            _ if self.grants.must_change_password => Err(Refusal::PasswordChangeRequired),
            _ => Err(Refusal::Denied(format!("not allowed to {}", describe(action)))),
        }
    }

    /// The groups this caller may read: `None` = every group (super admins, services).
    pub fn visible_groups(&self) -> Option<Vec<String>> {
        if self.service().is_some() || self.grants.super_admin {
            return None;
        }
        Some(self.grants.groups.keys().cloned().collect())
    }

    /// A request to another service made as this caller. The caller rides in the request's
    /// extensions; the client layer (`ramen-clients`) turns it into a signed ticket.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.extensions_mut().insert(self.clone());
        if !self.request_id.is_empty()
            && let Ok(value) = self.request_id.parse::<tonic::metadata::AsciiMetadataValue>()
        {
            request.metadata_mut().insert(metadata::REQUEST_ID, value);
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member_of(group: &str, role: Role) -> Caller {
        let grants =
            Grants { groups: BTreeMap::from([(group.to_owned(), role)]), ..Grants::default() };
        Caller::user("u-1", "req-1", grants)
    }

    #[test]
    fn the_rule_applies_to_what_the_caller_holds() {
        let member = member_of("a", Role::Member);
        assert_eq!(member.require("a", Action::ReadGroup), Ok(()));
        assert!(matches!(member.require("a", Action::Deploy), Err(Refusal::Denied(_))));
        assert!(matches!(member.require("b", Action::ReadGroup), Err(Refusal::NotFound(_))));
        let admin = member_of("a", Role::Admin);
        assert_eq!(admin.require("a", Action::Deploy), Ok(()));
        assert!(matches!(admin.require("a", Action::ManageGroup), Err(Refusal::Denied(_))));
        assert!(matches!(admin.require("", Action::Admin), Err(Refusal::Denied(_))));
        assert_eq!(admin.visible_groups(), Some(vec!["a".to_owned()]));
    }

    #[test]
    fn services_and_super_admins_see_everything_anonymous_callers_nothing() {
        let service = Caller::acting_as(metadata::ACTOR_DEPLOYER);
        assert_eq!(service.service(), Some(metadata::ACTOR_DEPLOYER));
        assert_eq!(service.require("any", Action::ManageGroup), Ok(()));
        assert_eq!(service.visible_groups(), None);
        let sa = Caller::user("u-2", "", Grants { super_admin: true, ..Grants::default() });
        assert_eq!(sa.require("", Action::Admin), Ok(()));
        assert_eq!(sa.visible_groups(), None);
        let anonymous = Caller::default();
        assert_eq!(anonymous.audit_actor(), "anonymous");
        assert!(matches!(
            anonymous.require("a", Action::ReadGroup),
            Err(Refusal::Unauthenticated(_))
        ));
    }

    #[test]
    fn a_pending_password_change_is_named() {
        let grants = Grants { must_change_password: true, super_admin: true, ..Grants::default() };
        let pending = Caller::user("u-3", "", grants);
        assert_eq!(pending.require("", Action::Admin), Err(Refusal::PasswordChangeRequired));
    }

    #[test]
    fn the_caller_rides_on_the_request() {
        let caller = member_of("a", Role::Admin);
        let request = caller.request(());
        assert_eq!(Caller::from_request(&request), caller);
        assert_eq!(request.metadata().get(metadata::REQUEST_ID).unwrap(), "req-1");
        assert_eq!(Caller::from_request_or(&tonic::Request::new(()), "unknown").actor, "unknown");
    }
}
