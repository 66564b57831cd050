//! Winning, keeping and losing the scheduler lease (task `rebalancer-lease`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ramen_bus::{Lease, LeaseError};
use ramen_lifecycle::TaskCenter;
use tokio_util::sync::CancellationToken;

use super::Scheduler;
use crate::model::now_ms;

pub const LEASE_KEY: &str = "scheduler";

impl Scheduler {
    pub fn spawn_leadership(self: &Arc<Self>, tasks: &TaskCenter) {
        let this = self.clone();
        tasks.spawn("rebalancer-lease", move |stop| async move { this.lead(stop).await });
    }

    async fn lead(&self, stop: CancellationToken) {
        let ttl = self.rebalancer.settings.lease_ttl;
        let beat = ttl / 3;
        let holder = self.rebalancer.replica.clone();
        let mut held: Option<Lease> = None;
        loop {
            held = match held.take() {
                Some(mut lease) => match lease.refresh().await {
                    Ok(()) => {
                        self.lease_expires_ms
                            .store(now_ms() + ttl.as_millis() as i64, Ordering::SeqCst);
                        Some(lease)
                    }
                    Err(err @ LeaseError::Lost { .. }) => {
                        tracing::warn!(%err, "scheduler lease lost; no longer the leader");
                        self.step_down();
                        None
                    }
                    // An outage: keep leading while the lease may still be ours; the next
                    // refresh says whether it survived.
                    Err(err) => {
                        tracing::warn!(%err, "scheduler lease not refreshed");
                        Some(lease)
                    }
                },
                None => match Lease::acquire(&self.lease, LEASE_KEY, &holder).await {
                    Ok(lease) => {
                        self.lease_expires_ms
                            .store(now_ms() + ttl.as_millis() as i64, Ordering::SeqCst);
                        self.leader.store(true, Ordering::SeqCst);
                        tracing::info!(%holder, "won the scheduler lease");
                        self.on_elected().await;
                        Some(lease)
                    }
                    Err(LeaseError::Held { .. }) => None,
                    Err(err) => {
                        tracing::debug!(%err, "scheduler lease not acquired");
                        None
                    }
                },
            };
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(beat) => {}
            }
        }
        // A clean stop hands the lease over at once instead of after its TTL.
        if let Some(lease) = held {
            self.step_down();
            if let Err(err) = lease.release().await {
                tracing::debug!(%err, "scheduler lease not released");
            }
        }
    }

    fn step_down(&self) {
        self.leader.store(false, Ordering::SeqCst);
        self.autoscaler.clear();
    }

    async fn on_elected(&self) {
        match self.rebalancer.adopt_stale().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(adopted = n, "resumed pending rebalances of a gone replica"),
            Err(err) => tracing::warn!(%err, "cannot look for pending rebalances"),
        }
    }
}
