//! `Authorize`: the other services (and the api-gateway, for every REST call) ask whether a
//! user may do an action on a group, and get the same answer auth's own RPCs act on.

use ramen_proto::auth::v1::{Action, AuthorizeResponse, Decision, Role as PbRole};
use ramen_store::Query;

use crate::access::{decide, need};
use crate::context::Ctx;
use crate::conversions::role_to_pb;
use crate::error::AuthError;
use crate::model::MembershipRecord;
use crate::{Auth, validate};

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
        if Ctx::new(user_id, "").service().is_some() {
            let exists = !scoped || self.group_exists(group).await?;
            let decision = if exists { Decision::Allow } else { Decision::NotFound };
            return Ok(AuthorizeResponse {
                decision: decision as i32,
                super_admin: true,
                role: PbRole::Unspecified as i32,
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
        Ok(AuthorizeResponse {
            decision: decision as i32,
            super_admin: user.value.super_admin,
            role: role as i32,
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
