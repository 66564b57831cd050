//! Domain types shared by the rebalancer's parts (wire types stay in `api::conversions`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Where a zone's workers run, and so which load balancer fronts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Local,
    Gcp,
    Aws,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Gcp => "gcp",
            Self::Aws => "aws",
        }
    }
}

/// A cell's state: in-flight as a fraction of the serving nodes' in-flight cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadState {
    /// Under [`LOW_BELOW`].
    Low,
    Even,
    /// Over [`HIGH_ABOVE`].
    High,
    /// No serving node reported within the liveness window.
    Down,
}

/// `low` below 30% of the cap.
pub const LOW_BELOW: f64 = 0.30;
/// `high` above 80% of the cap.
pub const HIGH_ABOVE: f64 = 0.80;

impl LoadState {
    /// The state of `in_flight` calls against a total cap (`down` when nothing serves).
    pub fn classify(in_flight: u64, cap: u64) -> Self {
        if cap == 0 {
            return Self::Down;
        }
        let utilization = in_flight as f64 / cap as f64;
        if utilization < LOW_BELOW {
            Self::Low
        } else if utilization > HIGH_ABOVE {
            Self::High
        } else {
            Self::Even
        }
    }
}

/// Who asked: a user id set by the gateway, or `scheduler` for the rebalancer's own runs.
pub use ramen_service::Caller;

/// The rebalancer acting on its own (scheduled runs, the autoscaler), audited as `scheduler`.
pub fn scheduler() -> Caller {
    Caller::acting_as(ramen_proto::metadata::ACTOR_SCHEDULER)
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Group and zone names are DNS labels ([`ramen_service::validate::dns_label`]).
pub fn check_label(field: &'static str, value: &str) -> Result<(), crate::error::Error> {
    ramen_service::validate::dns_label(value)
        .map_err(|reason| crate::error::Error::invalid(field, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_strict_at_the_edges() {
        assert_eq!(LoadState::classify(0, 0), LoadState::Down);
        assert_eq!(LoadState::classify(29, 100), LoadState::Low);
        assert_eq!(LoadState::classify(30, 100), LoadState::Even);
        assert_eq!(LoadState::classify(80, 100), LoadState::Even);
        assert_eq!(LoadState::classify(81, 100), LoadState::High);
        assert_eq!(LoadState::classify(500, 100), LoadState::High);
    }

    #[test]
    fn labels() {
        assert!(check_label("group", "team-a").is_ok());
        for bad in ["", "-a", "a-", "Team", "a_b", &"x".repeat(64)] {
            assert!(check_label("group", bad).is_err(), "{bad}");
        }
    }
}
