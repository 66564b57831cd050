//! [`PollAgain`]: a future that is polled again at once when it wakes itself.
//!
//! A hyper connection wakes its own task while it is being polled, on every request with a
//! body: the handler takes the body's chunk from hyper's channel, which wakes the channel's
//! sender, and the sender is the same connection. Tokio treats a task woken during its own
//! poll as a yield: it goes to the back of the run queue and an idle worker thread is woken
//! to steal it. On an otherwise quiet node that is a futex wake-up and a hand-off of the
//! connection to another core on every request (`strace -c`: two `futex` calls per
//! `tools/call`), and the two workers then pass each connection back and forth. Polling the
//! connection again inside the same poll does what the yield would have done, on the same
//! thread, without waking anyone. A wake from elsewhere (the I/O driver, another task)
//! reaches the task as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// How many times in a row a future that keeps waking itself is polled again before it is
/// made to yield the way tokio would have: a busy connection cannot hold a worker forever.
const AGAIN_AT_MOST: usize = 8;

pin_project_lite::pin_project! {
    /// `inner`, polled again within the same poll when it woke itself while being polled.
    pub struct PollAgain<F> {
        #[pin]
        inner: F,
        wake: Arc<SelfWake>,
        waker: Waker,
    }
}

impl<F: Future> PollAgain<F> {
    pub fn new(inner: F) -> Self {
        let wake = Arc::new(SelfWake::default());
        let waker = Waker::from(wake.clone());
        Self { inner, wake, waker }
    }
}

/// The waker `inner` is polled with.
#[derive(Default)]
struct SelfWake {
    /// `inner` is being polled: a wake now is a wake of itself, kept for the poller.
    polling: AtomicBool,
    /// Woken since the poll began.
    woken: AtomicBool,
    /// The task's own waker, for wakes while `inner` is not being polled.
    task: AtomicWaker,
}

impl Wake for SelfWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // SeqCst on both sides: either the poller sees `woken` after clearing `polling`, or
        // this sees `polling` cleared and wakes the task; a wake is never lost.
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl<F: Future> Future for PollAgain<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.wake.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(this.waker);
        for _ in 0..AGAIN_AT_MOST {
            this.wake.woken.store(false, Ordering::SeqCst);
            this.wake.polling.store(true, Ordering::SeqCst);
            let polled = this.inner.as_mut().poll(&mut inner_cx);
            this.wake.polling.store(false, Ordering::SeqCst);
            if polled.is_ready() {
                return polled;
            }
            if !this.wake.woken.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        // Still waking itself: yield as tokio would, behind the other tasks.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Wakes itself `times` times, then finishes; counts its polls.
    struct WakesItself {
        times: usize,
        polls: Arc<AtomicUsize>,
    }

    impl Future for WakesItself {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.times == 0 {
                return Poll::Ready(());
            }
            self.times -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// Counts the wakes of the task that polls the future under test.
    #[derive(Default)]
    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// One poll of `PollAgain` around a future that wakes itself `times` times: whether it
    /// finished, how often the inner future was polled, how often the task was woken.
    fn poll_once(times: usize) -> (bool, usize, usize) {
        let polls = Arc::new(AtomicUsize::new(0));
        let task = Arc::new(CountWakes::default());
        let waker = Waker::from(task.clone());
        let mut future =
            std::pin::pin!(PollAgain::new(WakesItself { times, polls: polls.clone() }));
        let ready = future.as_mut().poll(&mut Context::from_waker(&waker)).is_ready();
        (ready, polls.load(Ordering::SeqCst), task.0.load(Ordering::SeqCst))
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_without_waking_the_task() {
        let (ready, polls, wakes) = poll_once(3);
        assert!(ready);
        assert_eq!(polls, 4, "three self-wakes, four polls in one");
        assert_eq!(wakes, 0, "the task was never woken");
    }

    #[test]
    fn one_that_keeps_waking_itself_yields_to_the_task_after_a_bound() {
        let (ready, polls, wakes) = poll_once(100);
        assert!(!ready);
        assert_eq!(polls, AGAIN_AT_MOST);
        assert_eq!(wakes, 1, "woken once, to be polled again later");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wake_from_elsewhere_reaches_the_task() {
        // A oneshot answered from another task: the wake arrives while `PollAgain` is not
        // being polled, and must reach the task or this test hangs.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            tx.send(7).expect("the receiver waits");
        });
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), PollAgain::new(rx))
            .await
            .expect("the wake reached the task");
        assert_eq!(got.expect("sent"), 7);
        sender.await.expect("the sender finished");
    }
}
