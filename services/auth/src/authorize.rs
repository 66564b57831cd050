//! `Authorize`: the api-gateway asks, for every REST call, whether the user may do the route's
//! action on its group, and gets the same answer auth's own RPCs act on — with the user's
//! grants, which the gateway signs into the caller ticket so the service serving the call
//! applies the same rule without asking again.

use ramen_proto::auth::v1::{Action, AuthorizeResponse, Decision, GroupRole, Role as PbRole};
use ramen_store::Query;

use crate::conversions::role_to_pb;
use crate::error::AuthError;
use crate::model::MembershipRecord;
use crate::{Auth, validate};
use ramen_access::Caller;
use ramen_access::{decide, need};

impl Auth {
    /// May `user_id` (a user or a service actor) do `action` on `group`? UNAUTHENTICATED for an
    /// id that names nobody (a deleted user's token that has not expired yet).
    pub async fn authorize(
        &self,
        user_id: &str,
        group: &str,
        action: Action,
    ) -> Result<AuthorizeResponse, AuthError> {
        let Some((_, scoped)) = need(action) else {
            return Err(AuthError::invalid("action", "must name an action"));
        };
        if scoped {
            validate::group(group)?;
        }
        if Caller::new(user_id, "").service().is_some() {
            let exists = !scoped || self.group_exists(group).await?;
            let decision = if exists { Decision::Allow } else { Decision::NotFound };
            return Ok(AuthorizeResponse {
                decision: decision as i32,
                super_admin: true,
                role: PbRole::Unspecified as i32,
                ..AuthorizeResponse::default()
            });
        }
        if user_id.is_empty() {
            return Err(AuthError::Unauthenticated("no user to authorize".into()));
        }
        let Some(user) = self.db.users.get(user_id).await? else {
            return Err(AuthError::Unauthenticated("the user no longer exists".into()));
        };
        let standing = self.standing(&user.value, user_id, if scoped { group } else { "" }).await?;
        let decision = decide(standing, action);
        let role = standing.role.map_or(PbRole::Unspecified, role_to_pb);
        let grants = self.grants(user_id).await?;
        Ok(AuthorizeResponse { decision: decision as i32, role: role as i32, ..grants })
    }

    /// What `user_id` holds, with nothing to decide (routes open to every signed-in user).
    pub async fn grants(&self, user_id: &str) -> Result<AuthorizeResponse, AuthError> {
        if user_id.is_empty() {
            return Err(AuthError::Unauthenticated("no user to look up".into()));
        }
        let Some(user) = self.db.users.get(user_id).await? else {
            return Err(AuthError::Unauthenticated("the user no longer exists".into()));
        };
        let groups = self
            .memberships_of(user_id)
            .await?
            .into_iter()
            .map(|m| GroupRole { group: m.group, role: role_to_pb(m.role) as i32 })
            .collect();
        Ok(AuthorizeResponse {
            decision: Decision::Allow as i32,
            super_admin: user.value.super_admin,
            role: PbRole::Unspecified as i32,
            must_change_password: user.value.must_change_password,
            groups,
        })
    }

    pub async fn memberships_of(&self, user_id: &str) -> Result<Vec<MembershipRecord>, AuthError> {
        let found = self
            .db
            .memberships
            .find(&Query::new().eq("user_id", user_id).sort_asc("group"))
            .await?;
        Ok(found.into_iter().map(|m| m.value).collect())
    }
}
