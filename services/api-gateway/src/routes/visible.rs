//! Which groups a caller may see, for the pages that span groups (zones page, load cells).

use ramen_proto::auth::v1 as pb;

use crate::caller::Authed;
use crate::error::ApiResult;
use crate::state::Gateway;

/// The groups the caller may see: `None` = every group (super admins), else their
/// memberships (possibly none). Asked of auth on every call, like the access layer, so a
/// removed member stops seeing the group at once.
pub async fn groups(gateway: &Gateway, authed: &Authed) -> ApiResult<Option<Vec<String>>> {
    let request = pb::GetUserRequest { user_id: authed.caller.user_id.clone() };
    let answer =
        gateway.clients().auth.clone().get_user(authed.call.request(request)).await?.into_inner();
    let super_admin = answer.user.as_ref().is_some_and(|u| u.super_admin);
    if super_admin {
        return Ok(None);
    }
    let mut groups: Vec<String> = answer.memberships.into_iter().map(|m| m.group).collect();
    groups.sort();
    groups.dedup();
    Ok(Some(groups))
}
