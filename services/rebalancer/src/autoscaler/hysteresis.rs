//! The autoscaler's decision for one placement, as a pure state machine over the cell's state.
//!
//! One step at a time, each after the signal held for a whole window: `high` for
//! `up_after` adds a stable worker (up to the maximum, 2 × count), `low` for `down_after`
//! removes one (never below the count). `even` or `down` in between restarts both windows, and
//! so does every step, so a flapping cell never scales and the next step needs a fresh
//! window measured with the new worker count.

use std::time::Duration;

use crate::model::LoadState;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Hold,
    Scale { from: u32, to: u32 },
}

/// How long a signal must hold before a step: `high` for `up_after`, `low` for `down_after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub up_after: Duration,
    pub down_after: Duration,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Track {
    /// The stable workers the autoscaler wants; 0 until first seen serving.
    pub desired: u32,
    high_since: Option<i64>,
    low_since: Option<i64>,
}

impl Track {
    /// Feeds the cell's state at `now`; `workers` is the count of running stable workers, and
    /// `min`/`max` the placement's bounds. A placement with no worker (never deployed, or
    /// scaled to zero by hand) is left alone.
    pub fn observe(
        &mut self,
        now: i64,
        state: LoadState,
        workers: u32,
        min: u32,
        max: u32,
        windows: Windows,
    ) -> Decision {
        let Windows { up_after, down_after } = windows;
        let max = max.max(min);
        if self.desired == 0 {
            if state == LoadState::Down || workers == 0 {
                return Decision::Hold;
            }
            self.desired = workers.clamp(min, max);
        }
        self.desired = self.desired.clamp(min, max);
        match state {
            LoadState::High => {
                self.low_since = None;
                let since = *self.high_since.get_or_insert(now);
                if now - since >= up_after.as_millis() as i64 && self.desired < max {
                    return self.step(now, self.desired + 1);
                }
            }
            LoadState::Low => {
                self.high_since = None;
                let since = *self.low_since.get_or_insert(now);
                if now - since >= down_after.as_millis() as i64 && self.desired > min {
                    return self.step(now, self.desired - 1);
                }
            }
            LoadState::Even | LoadState::Down => (self.high_since, self.low_since) = (None, None),
        }
        Decision::Hold
    }

    fn step(&mut self, _now: i64, to: u32) -> Decision {
        let from = self.desired;
        self.desired = to;
        (self.high_since, self.low_since) = (None, None);
        Decision::Scale { from, to }
    }

    /// A scale call failed: go back to what was there and measure again.
    pub fn revert(&mut self, to: u32) {
        self.desired = to;
        (self.high_since, self.low_since) = (None, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LoadState::*;

    const UP: Duration = Duration::from_secs(10);
    const DOWN: Duration = Duration::from_secs(30);

    fn feed(track: &mut Track, from: i64, to: i64, state: LoadState) -> Vec<Decision> {
        (from..=to)
            .map(|t| {
                track.observe(t * 1000, state, 2, 2, 4, Windows { up_after: UP, down_after: DOWN })
            })
            .filter(|d| *d != Decision::Hold)
            .collect()
    }

    #[test]
    fn sustained_high_scales_up_one_step_per_window_up_to_twice_the_count() {
        let mut track = Track::default();
        assert_eq!(feed(&mut track, 0, 9, High), vec![], "not sustained yet");
        assert_eq!(feed(&mut track, 10, 10, High), vec![Decision::Scale { from: 2, to: 3 }]);
        assert_eq!(feed(&mut track, 11, 19, High), vec![], "a fresh window after each step");
        assert_eq!(
            feed(&mut track, 20, 60, High),
            vec![Decision::Scale { from: 3, to: 4 }],
            "never above 2 × count"
        );
    }

    #[test]
    fn flapping_never_scales() {
        let mut track = Track::default();
        for round in 0..20 {
            let t = round * 12;
            assert_eq!(feed(&mut track, t, t + 8, High), vec![]);
            assert_eq!(feed(&mut track, t + 9, t + 11, Even), vec![]);
        }
        assert_eq!(track.desired, 2);
    }

    #[test]
    fn sustained_low_scales_down_but_never_below_the_count() {
        let mut track = Track::default();
        feed(&mut track, 0, 30, High);
        assert_eq!(track.desired, 4);
        assert_eq!(feed(&mut track, 31, 60, Low), vec![], "down needs the longer window");
        assert_eq!(feed(&mut track, 61, 61, Low), vec![Decision::Scale { from: 4, to: 3 }]);
        assert_eq!(feed(&mut track, 62, 500, Low), vec![Decision::Scale { from: 3, to: 2 }]);
        assert_eq!(track.desired, 2, "the count is the floor");
    }

    #[test]
    fn a_down_cell_is_left_alone() {
        let mut track = Track::default();
        assert_eq!(feed(&mut track, 0, 100, Down), vec![]);
        assert_eq!(track.desired, 0);
    }
}
