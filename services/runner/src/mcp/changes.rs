//! What changed, for the `subscriptions/listen` streams of 2026-07-28 clients: a list
//! (tools, prompts, resources) or one resource. Each stream filters by what its client
//! asked for. Sessions of 2025-11-25 clients hear about the same changes on their GET
//! streams (`Sessions::broadcast`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::broadcast;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Tools,
    Prompts,
    Resources,
    ResourceUpdated(Arc<str>),
    /// The node is going away: streams end with their final result.
    Closing,
}

pub struct Changes {
    tx: broadcast::Sender<Change>,
    open: AtomicUsize,
}

impl Default for Changes {
    fn default() -> Self {
        Self { tx: broadcast::channel(256).0, open: AtomicUsize::new(0) }
    }
}

/// One open listen stream; counted until dropped.
pub struct Listener {
    pub changes: broadcast::Receiver<Change>,
    hub: Arc<Changes>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Changes {
    /// A new listener, or `None` when `max` streams are already open.
    pub fn listen(self: &Arc<Self>, max: usize) -> Option<Listener> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .ok()?;
        Some(Listener { changes: self.tx.subscribe(), hub: self.clone() })
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    pub fn publish(&self, change: Change) {
        let _ = self.tx.send(change);
    }

    pub fn resource_updated(&self, uri: &str) {
        self.publish(Change::ResourceUpdated(uri.into()));
    }
}
