//! How ramen services call one another — one way, the same for every pair:
//!
//! - [`channel`]: the one channel builder (lazy, so a service starts before or without the
//!   ones it calls) wrapped in the one call layer, which puts on every call the caller's
//!   signed ticket (`x-ramen-caller`, see `ramen-access`), the request id and the W3C
//!   `traceparent` of the current span, so a trace never breaks at a service hop;
//! - [`UpstreamError`]: what a failed call to another service is, with the one table of
//!   which gRPC codes are worth retrying;
//! - one client trait per service ([`AuthClient`], [`ZoneClient`], [`DeployerClient`],
//!   [`RebalancerClient`], [`NodeClient`]) holding the calls services make on each other, with
//!   a gRPC implementation each and, behind the `test-util` feature, in-memory fakes.
//!
//! The api-gateway translates REST to nearly every RPC, so it uses the generated clients over
//! [`channel::Signed`] directly rather than a trait per call; the layer and the errors are the
//! same.

mod auth;
pub mod channel;
mod deployer;
mod error;
#[cfg(feature = "test-util")]
pub mod fakes;
mod macros;
mod node;
mod rebalancer;
mod zones;

pub use auth::{AuthClient, GrpcAuth, SecretValue, grants};
pub use channel::{Signed, connect_lazy};
pub use deployer::{DeployerClient, GrpcDeployer};
pub use error::{UpstreamError, is_retryable};
pub use macros::CallBudget;
pub use node::{GrpcNode, NodeClient, NodeTarget};
pub use rebalancer::{GrpcRebalancer, RebalancerClient};
pub use zones::{GrpcZones, ZoneClient};

/// A bound on ordinary calls between services; calls that wait for a rollout say their own.
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
