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
    /// The caller's signed ticket (`ramen-access`): who is acting and what they hold, minted
    /// by the api-gateway for a user it authenticated or by a service acting on its own, and
    /// verified by every service before a handler runs.
    pub const CALLER: &str = "x-ramen-caller";
    /// Request id of the originating API call, carried into audit entries and events.
    pub const REQUEST_ID: &str = "x-request-id";
    /// Why a call failed, when a caller branches on it (see [`ErrorReason`]).
    pub const REASON: &str = "x-ramen-reason";
    /// Actor of the rebalancer's auto-rebalance runs (audited as such).
    pub const ACTOR_SCHEDULER: &str = "scheduler";
    /// Actor of the deploy pipeline; the only one allowed to resolve secret values.
    pub const ACTOR_DEPLOYER: &str = "deployer";
    /// Actor of the zone-manager's own work (teardown, key-hash pushes).
    pub const ACTOR_ZONE_MANAGER: &str = "zone-manager";
    /// Actor of the MCP edge's routing lookups (environment zones, endpoints): reads only.
    pub const ACTOR_EDGE: &str = "edge";
    /// Actor of the rebalancer's own reads (zones, placements, workers for its catalog).
    pub const ACTOR_REBALANCER: &str = "rebalancer";

    /// A failure a caller acts on differently from others of the same gRPC code, carried as
    /// status metadata ([`REASON`]) instead of a prefix of the message.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ErrorReason {
        /// The user holds a one-time password: only ChangePassword is allowed.
        PasswordChangeRequired,
    }

    impl ErrorReason {
        pub fn as_str(self) -> &'static str {
            match self {
                Self::PasswordChangeRequired => "password-change-required",
            }
        }

        /// The reason a status carries, if it names one this build knows.
        pub fn of(status: &tonic::Status) -> Option<Self> {
            match status.metadata().get(REASON)?.to_str().ok()? {
                "password-change-required" => Some(Self::PasswordChangeRequired),
                _ => None,
            }
        }

        /// `status` with this reason attached.
        pub fn attach(self, mut status: tonic::Status) -> tonic::Status {
            status
                .metadata_mut()
                .insert(REASON, tonic::metadata::AsciiMetadataValue::from_static(self.as_str()));
            status
        }
    }
}

impl auth::v1::AuthorizeResponse {
    /// Whether the action may go ahead (anything else is 403 or 404, see `Decision`).
    pub fn allowed(&self) -> bool {
        self.decision() == auth::v1::Decision::Allow
    }
}

#[cfg(test)]
mod tests;
