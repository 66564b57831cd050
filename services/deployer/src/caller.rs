//! Who is calling (`x-ramen-actor`, `x-request-id`) and the role check every RPC makes
//! through auth's `Authorize`.

use ramen_proto::auth::v1::{Action, Decision};
use ramen_proto::metadata;
use tonic::metadata::MetadataMap;

use crate::Deployer;
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ctx {
    pub actor: String,
    pub request_id: String,
}

impl Ctx {
    pub fn new(actor: impl Into<String>, request_id: impl Into<String>) -> Self {
        Self { actor: actor.into(), request_id: request_id.into() }
    }

    pub fn from_metadata(metadata: &MetadataMap) -> Self {
        let get = |key: &str| {
            metadata
                .get(key)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .unwrap_or_default()
                .to_owned()
        };
        Self { actor: get(metadata::ACTOR), request_id: get(metadata::REQUEST_ID) }
    }

    /// The deployer acting on its own (jobs, sagas).
    pub fn deployer() -> Self {
        Self::new(metadata::ACTOR_DEPLOYER, "")
    }

    pub fn audit_actor(&self) -> &str {
        if self.actor.is_empty() { "anonymous" } else { &self.actor }
    }

    /// A request to another service carrying this caller.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Ok(actor) = self.actor.parse() {
            request.metadata_mut().insert(metadata::ACTOR, actor);
        }
        if let Ok(id) = self.request_id.parse() {
            request.metadata_mut().insert(metadata::REQUEST_ID, id);
        }
        request
    }
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

/// Services acting on their own behalf (trusted like a super admin inside the control plane).
pub fn is_service_actor(actor: &str) -> bool {
    [metadata::ACTOR_SCHEDULER, metadata::ACTOR_DEPLOYER, metadata::ACTOR_ZONE_MANAGER]
        .contains(&actor)
}
