//! Who is calling (`x-ramen-actor`, `x-request-id`) and the role check every RPC makes
//! through auth's `Authorize`.

use ramen_proto::auth::v1::{Action, Decision};
use ramen_proto::metadata;

use crate::Deployer;
use crate::error::{Error, Result};

/// The caller every service reads from the request metadata ([`ramen_service::Caller`]).
pub use ramen_service::Caller as Ctx;

/// The deployer acting on its own (jobs, sagas).
pub fn deployer() -> Ctx {
    Ctx::acting_as(metadata::ACTOR_DEPLOYER)
}

/// What the caller turned out to be.
#[derive(Clone, Copy, Debug)]
pub struct Granted {
    pub super_admin: bool,
}

impl Deployer {
    /// Refuses the call unless auth allows `action` on `group` (empty for global actions): a
    /// caller who may not see the group gets NOT_FOUND, one who may see it PERMISSION_DENIED.
    pub async fn require(&self, ctx: &Ctx, group: &str, action: Action) -> Result<Granted> {
        if ctx.actor.is_empty() {
            return Err(Error::Unauthenticated(format!(
                "no caller identity ({} metadata)",
                metadata::ACTOR
            )));
        }
        let answer = self.auth.authorize(&ctx.actor, group, action).await?;
        match answer.decision() {
            Decision::Allow => Ok(Granted { super_admin: answer.super_admin }),
            Decision::NotFound => Err(Error::NotFound(format!("group `{group}`"))),
            Decision::Deny | Decision::Unspecified => Err(Error::PermissionDenied(format!(
                "`{}` may not {} {}",
                ctx.actor,
                describe(action),
                if group.is_empty() { String::new() } else { format!("in group `{group}`") }
            ))),
        }
    }
}

fn describe(action: Action) -> &'static str {
    match action {
        Action::ReadGroup => "read",
        Action::CreateGroup => "create groups",
        Action::ManageGroup => "manage the group",
        Action::ManageEnvironments => "manage environments",
        Action::Deploy => "deploy",
        Action::Admin => "administer ramen (super admins only)",
        _ => "do this",
    }
}
