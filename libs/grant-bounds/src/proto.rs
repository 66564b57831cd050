//! The bounds as `ramen.auth.v1` carries them.

use ramen_proto::auth::v1 as pb;
use ramen_proto::common::v1::Provider as PbProvider;

use crate::{Bounds, Provider, ProviderBounds};

impl Provider {
    /// The bounded provider a rule's `ramen.common.v1.Provider` names; `None` for the local
    /// provider (which records rules without applying them) and unknown numbers.
    pub fn from_pb(provider: i32) -> Option<Self> {
        match PbProvider::try_from(provider) {
            Ok(PbProvider::Aws) => Some(Self::Aws),
            Ok(PbProvider::Gcp) => Some(Self::Gcp),
            _ => None,
        }
    }
}

impl From<&ProviderBounds> for pb::ProviderBounds {
    fn from(b: &ProviderBounds) -> Self {
        Self {
            permissions: b.permissions.clone(),
            denied: b.denied.clone(),
            resources: b.resources.clone(),
            wildcards: b.wildcards,
            unscoped: b.unscoped,
        }
    }
}

impl From<pb::ProviderBounds> for ProviderBounds {
    fn from(b: pb::ProviderBounds) -> Self {
        Self {
            permissions: b.permissions,
            denied: b.denied,
            resources: b.resources,
            wildcards: b.wildcards,
            unscoped: b.unscoped,
        }
    }
}

impl Bounds {
    /// From a message's two providers; one left out keeps its defaults (an old sender).
    pub fn from_pb(aws: Option<pb::ProviderBounds>, gcp: Option<pb::ProviderBounds>) -> Self {
        let defaults = Self::default();
        Self {
            aws: aws.map_or(defaults.aws, Into::into),
            gcp: gcp.map_or(defaults.gcp, Into::into),
        }
    }
}
