//! Who is calling a service: the `x-ramen-actor` and `x-request-id` gRPC metadata, set by the
//! api-gateway (a user id, after it verified the user's access token) or by a service acting on
//! its own behalf. One type for every service, so they read, forward and audit callers alike.

use ramen_proto::metadata;
use tonic::metadata::MetadataMap;

/// Services that act on their own behalf. They are trusted like a super admin, because the
/// gRPC ports are reachable only inside the control plane (NetworkPolicy).
pub const SERVICE_ACTORS: &[&str] = &[
    metadata::ACTOR_SCHEDULER,
    metadata::ACTOR_DEPLOYER,
    metadata::ACTOR_ZONE_MANAGER,
    metadata::ACTOR_EDGE,
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// User id or service actor; empty when the caller set none.
    pub actor: String,
    /// Empty when the caller set none.
    pub request_id: String,
}

impl Caller {
    pub fn new(actor: impl Into<String>, request_id: impl Into<String>) -> Self {
        Self { actor: actor.into(), request_id: request_id.into() }
    }

    /// A service acting on its own (a job, a saga, a scheduled run): `actor` is one of
    /// [`SERVICE_ACTORS`].
    pub fn acting_as(actor: &'static str) -> Self {
        Self::new(actor, "")
    }

    /// The caller a request's metadata names (values trimmed; empty when absent).
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

    /// [`Caller::from_metadata`], with `fallback` as the actor when the request names none
    /// (the zone-manager and the rebalancer audit such calls as `unknown`).
    pub fn from_metadata_or(metadata: &MetadataMap, fallback: &str) -> Self {
        let mut caller = Self::from_metadata(metadata);
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

    /// A request to another service that carries this caller on (an empty field is left
    /// out, which the next service reads the same way).
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        for (key, value) in
            [(metadata::ACTOR, &self.actor), (metadata::REQUEST_ID, &self.request_id)]
        {
            if value.is_empty() {
                continue;
            }
            if let Ok(value) = value.parse::<tonic::metadata::AsciiMetadataValue>() {
                request.metadata_mut().insert(key, value);
            }
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_from_metadata_and_carried_on() {
        let mut incoming = MetadataMap::new();
        incoming.insert(metadata::ACTOR, " u-1 ".parse().unwrap());
        incoming.insert(metadata::REQUEST_ID, "req-7".parse().unwrap());
        let caller = Caller::from_metadata(&incoming);
        assert_eq!(caller, Caller::new("u-1", "req-7"));
        assert_eq!(Caller::from_metadata_or(&incoming, "unknown"), caller);
        assert_eq!(caller.service(), None);

        let outgoing = caller.request(());
        assert_eq!(Caller::from_metadata(outgoing.metadata()), caller);
    }

    #[test]
    fn missing_metadata_reads_empty_and_audits_as_anonymous() {
        let caller = Caller::from_metadata(&MetadataMap::new());
        assert_eq!(caller, Caller::default());
        assert_eq!(caller.audit_actor(), "anonymous");
        assert_eq!(Caller::from_metadata_or(&MetadataMap::new(), "unknown").actor, "unknown");
        assert!(caller.request(()).metadata().get(metadata::REQUEST_ID).is_none());
    }

    #[test]
    fn services_are_recognised() {
        let caller = Caller::acting_as(metadata::ACTOR_DEPLOYER);
        assert_eq!(caller.service(), Some(metadata::ACTOR_DEPLOYER));
        assert_eq!(caller.audit_actor(), metadata::ACTOR_DEPLOYER);
    }
}
