//! Weights from measured load.
//!
//! Each target (a worker behind the local edge, a zone's target group on AWS, a zone's
//! backend on GCP) has a measured in-flight count and an in-flight cap (summed over its live,
//! ready nodes). Its free capacity is its *headroom*: `h = cap - min(in_flight, cap)`. New work
//! should go where the headroom is, so
//!
//! ```text
//! weight_i = max(floor, round(1000 * h_i / max_j h_j))
//! ```
//!
//! in permille of the roomiest target (which gets 1000). Normalising to the maximum rather
//! than the sum makes the same number mean the same thing on every balancer: a relative weight
//! for the edge and AWS, and directly the GCP capacity scaler (`weight / 1000`). When every
//! target is saturated (no headroom anywhere) the caps stand in for the headroom, splitting by
//! capacity. A target without a live node gets the floor: it stays reachable, so it is
//! measured again as soon as it serves, and a rebalance never drains a zone.

/// One target's measured load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetLoad {
    pub target: String,
    /// Some live, ready node of the target reported within the liveness window.
    pub live: bool,
    pub in_flight: u32,
    pub cap: u32,
}

/// The permille scale's top.
pub const FULL: u32 = 1000;

/// Nothing to balance by: no target has a live node.
#[derive(Debug, PartialEq, Eq)]
pub struct NothingMeasured;

/// One weight per load, in order (see the module documentation for the formula).
pub fn compute(loads: &[TargetLoad], floor: u32) -> Result<Vec<u32>, NothingMeasured> {
    let live: Vec<&TargetLoad> = loads.iter().filter(|l| l.live && l.cap > 0).collect();
    if live.is_empty() {
        return Err(NothingMeasured);
    }
    let headroom = |l: &TargetLoad| u64::from(l.cap - l.in_flight.min(l.cap));
    let saturated = live.iter().all(|l| headroom(l) == 0);
    let room = |l: &TargetLoad| if saturated { u64::from(l.cap) } else { headroom(l) };
    let top = live.iter().map(|l| room(l)).max().unwrap_or(1).max(1);
    let floor = floor.min(FULL);
    Ok(loads
        .iter()
        .map(|l| {
            if !l.live || l.cap == 0 {
                return floor;
            }
            let share = (u64::from(FULL) * room(l) + top / 2) / top;
            (share as u32).clamp(floor, FULL)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(live: bool, in_flight: u32, cap: u32) -> TargetLoad {
        TargetLoad { target: String::new(), live, in_flight, cap }
    }

    #[test]
    fn weight_follows_headroom_normalised_to_the_roomiest() {
        let w = compute(&[load(true, 48, 64), load(true, 0, 64)], 100).unwrap();
        assert_eq!(w, vec![250, 1000]);
        let w = compute(&[load(true, 10, 100), load(true, 10, 100)], 100).unwrap();
        assert_eq!(w, vec![1000, 1000], "equal load, equal weight");
    }

    #[test]
    fn never_below_the_floor_and_dead_targets_stay_reachable() {
        let w = compute(&[load(true, 64, 64), load(true, 0, 64), load(false, 0, 0)], 100).unwrap();
        assert_eq!(w, vec![100, 1000, 100]);
    }

    #[test]
    fn all_saturated_splits_by_capacity() {
        let w = compute(&[load(true, 70, 64), load(true, 128, 128)], 100).unwrap();
        assert_eq!(w, vec![500, 1000]);
    }

    #[test]
    fn nothing_live_is_refused() {
        assert_eq!(compute(&[load(false, 0, 64), load(true, 0, 0)], 100), Err(NothingMeasured));
        assert_eq!(compute(&[], 100), Err(NothingMeasured));
    }
}
