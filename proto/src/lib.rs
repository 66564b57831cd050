//! ramen's gRPC contracts (`proto/ramen/<service>/v1/*.proto`) and JetStream event schemas.
//! Generated into `OUT_DIR` at build time; nothing generated is committed.
//!
//! - [`common`], [`events`]: also serde (JSON on the bus; see [`event::Event`]).
//! - [`auth`], [`deployer`], [`zone`], [`rebalancer`], [`runner`]: one gRPC service each, with
//!   `<name>_service_server` / `<name>_service_client` modules behind the `server` / `client`
//!   features.
//! - Messages holding secrets print `<redacted>` in their `Debug` output.

pub mod event;
pub mod json;
mod redact;

// The generated code is not ours to lint.
macro_rules! packages {
    ($($module:ident => $package:literal),* $(,)?) => {
        $(
            pub mod $module {
                #[allow(clippy::all, missing_docs)]
                pub mod v1 {
                    tonic::include_proto!($package);
                }
            }
        )*
    };
}

packages! {
    common => "ramen.common.v1",
    auth => "ramen.auth.v1",
    deployer => "ramen.deployer.v1",
    zone => "ramen.zone.v1",
    rebalancer => "ramen.rebalancer.v1",
    runner => "ramen.runner.v1",
    events => "ramen.events.v1",
}

/// gRPC metadata keys used between ramen services.
pub mod metadata {
    /// Who is acting: a user id, set by the api-gateway after it verified the caller's access
    /// token, or a service actor below when a service acts on its own. Services trust it because
    /// their gRPC ports are reachable only from the control plane (NetworkPolicy).
    pub const ACTOR: &str = "x-ramen-actor";
    /// Request id of the originating API call, carried into audit entries and events.
    pub const REQUEST_ID: &str = "x-request-id";
    /// Actor of the rebalancer's auto-rebalance runs (audited as such).
    pub const ACTOR_SCHEDULER: &str = "scheduler";
    /// Actor of the deploy pipeline; the only one allowed to resolve secret values.
    pub const ACTOR_DEPLOYER: &str = "deployer";
    /// Actor of the zone-manager's own work (teardown, key-hash pushes).
    pub const ACTOR_ZONE_MANAGER: &str = "zone-manager";
    /// Actor of the MCP edge's routing lookups (environment zones, endpoints): reads only.
    pub const ACTOR_EDGE: &str = "edge";
}

impl auth::v1::AuthorizeResponse {
    /// Whether the action may go ahead (anything else is 403 or 404, see `Decision`).
    pub fn allowed(&self) -> bool {
        self.decision() == auth::v1::Decision::Allow
    }
}

#[cfg(test)]
mod tests;
