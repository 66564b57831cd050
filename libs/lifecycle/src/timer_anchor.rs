//! One timer kept armed beside a server's, so that arming a request's timer costs no system
//! call.
//!
//! Tokio wakes its I/O driver (a write to an eventfd) whenever a timer is armed that is due
//! before every other armed timer, or when no other is armed: the driver may be asleep in
//! `epoll_wait` with a later deadline, or none. A server idle between requests has no timer
//! armed, and hyper arms its header-read timeout each time it waits for a kept-alive
//! connection's next request, so a node serving one call at a time made that write on every
//! call (`strace -c`: two `write`s per `tools/call`, the runtime's frame and the eventfd; the
//! driver also had a wake-up to take). With a timer due every [`PERIOD`] always armed, a
//! request's timeout (10 s at the least) is never the earliest, and arming it only inserts it
//! into the wheel. The price is one wake-up per period.

use std::time::Duration;

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

/// How often the kept timer fires: well under the shortest timeout a request arms
/// ([`crate::HEADER_READ_TIMEOUT`]), so that one is never due first.
const PERIOD: Duration = Duration::from_secs(1);

/// Keeps a timer armed on the current runtime until `stop` is cancelled.
pub(crate) async fn keep_a_timer_armed(stop: CancellationToken) {
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_kept_timer_stops_with_its_server() {
        let stop = CancellationToken::new();
        let kept = tokio::spawn(keep_a_timer_armed(stop.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!kept.is_finished(), "the timer must stay armed while the server runs");
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), kept)
            .await
            .expect("the kept timer outlived its server's stop")
            .expect("the kept timer's task failed");
    }
}
