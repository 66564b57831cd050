//! Who a caller ticket is for. Every ticket names one audience and is signed under that
//! audience's own key, so a ticket lifted from one service (or one node's memory) is worthless
//! at any other: each service verifies with its own audience's key only.
//!
//! Services are audiences by name (the same names the clients report errors under); worker
//! nodes by placement, `runner:<group>/<zone>` — every node of a placement shares one config
//! (one Kubernetes Secret per track), so the key the node is given is the placement's.

use std::time::Duration;

pub const AUTH: &str = "auth";
pub const DEPLOYER: &str = "deployer";
pub const ZONE_MANAGER: &str = "zone-manager";
pub const REBALANCER: &str = "rebalancer";

const RUNNER_PREFIX: &str = "runner:";

/// How long a ticket for a service is good for after it was signed: long enough for any clock
/// skew between replicas, short enough that a ticket seen on the wire is soon worthless.
pub const SERVICE_TTL: Duration = Duration::from_secs(300);

/// How long a ticket for a worker node is good for. Nodes run beside group code: a ticket in a
/// node's memory or on its loopback is the likeliest to be seen by someone it was not meant for,
/// and every call to a node is signed just before it is made, so one minute covers the call and
/// any skew between the control plane's clock and the node's.
pub const NODE_TTL: Duration = Duration::from_secs(60);

/// The audience of the worker nodes of `group` in `zone`.
pub fn runner(group: &str, zone: &str) -> String {
    format!("{RUNNER_PREFIX}{group}/{zone}")
}

/// Whether `audience` is a placement's worker nodes.
pub fn is_runner(audience: &str) -> bool {
    audience.starts_with(RUNNER_PREFIX)
}

/// How long a ticket for `audience` lives.
pub fn ttl(audience: &str) -> Duration {
    if is_runner(audience) { NODE_TTL } else { SERVICE_TTL }
}
