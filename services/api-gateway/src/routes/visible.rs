//! Which groups a caller may see, for the pages that span groups (zones page, load cells).

use crate::caller::Authed;
use crate::error::ApiResult;
use crate::state::Gateway;

/// The groups the caller may see: `None` = every group (super admins), else their
/// memberships (possibly none). Read from the grants auth answered for this very request (the
/// access layer asked it), so a removed member stops seeing the group at once.
pub async fn groups(_gateway: &Gateway, authed: &Authed) -> ApiResult<Option<Vec<String>>> {
    Ok(authed.call.visible_groups())
}
