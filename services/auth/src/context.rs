//! Who is calling: the `x-ramen-actor` and `x-request-id` metadata set by the api-gateway (a
//! user id, after it verified the user's access token) or by a service acting on its own.

use ramen_proto::metadata;
use tonic::metadata::MetadataMap;

/// Services that act on their own behalf. They are trusted like a super admin, because the
/// gRPC ports are reachable only inside the control plane (NetworkPolicy); only `deployer` may
/// resolve secret values.
pub const SERVICE_ACTORS: &[&str] = &[
    metadata::ACTOR_SCHEDULER,
    metadata::ACTOR_DEPLOYER,
    metadata::ACTOR_ZONE_MANAGER,
    metadata::ACTOR_EDGE,
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ctx {
    /// User id or service actor; empty when the caller set none.
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

    pub fn service(&self) -> Option<&'static str> {
        SERVICE_ACTORS.iter().copied().find(|s| *s == self.actor)
    }

    /// The actor as recorded in the audit log (`anonymous` for calls without one: login).
    pub fn audit_actor(&self) -> &str {
        if self.actor.is_empty() { "anonymous" } else { &self.actor }
    }
}
