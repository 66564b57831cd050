//! Who is calling (the caller the serving layer verified from the request's ticket) and the one
//! rule every RPC applies to it (`ramen_access`): decided here, from what the caller holds,
//! with no call to auth.

use ramen_proto::auth::v1::Action;
use ramen_proto::metadata;

use crate::error::{Error, Result};

pub use ramen_service::Caller;

/// The deployer acting on its own (jobs, sagas).
pub fn deployer() -> Caller {
    Caller::acting_as(metadata::ACTOR_DEPLOYER)
}

/// Refuses the call unless the caller may do `action` on `group` (empty for global actions):
/// a caller who may not see the group gets NOT_FOUND, one who may see it PERMISSION_DENIED.
pub fn require(caller: &Caller, group: &str, action: Action) -> Result<()> {
    caller.require(group, action).map_err(Error::from)
}

/// `None` = every group (super admin or service actor).
pub fn visible_groups(caller: &Caller) -> Result<Option<Vec<String>>> {
    if caller.actor.is_empty() {
        return Err(Error::Unauthenticated("no caller identity".into()));
    }
    Ok(caller.visible_groups())
}
