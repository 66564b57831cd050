//! The node's shared state: live policy and catalog (swapped atomically), the runtime, the
//! sessions, the in-flight count and the drain flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use serde::Serialize;

use crate::catalog::{Catalog, Kind};
use crate::mcp::changes::{Change, Changes};
use crate::mcp::jsonrpc;
use crate::mcp::modern::park::Parked;
use crate::mcp::session::{Sessions, sse_event};
use crate::metrics::NodeMetrics;
use crate::policy::Policy;
use crate::runtime::{Report, Runtime};

/// Limits and identity of the MCP endpoint.
#[derive(Clone, Debug)]
pub struct Settings {
    pub in_flight_cap: usize,
    pub max_body_bytes: usize,
    pub page_size: usize,
    pub max_sessions: usize,
    pub max_sessions_per_key: usize,
    pub session_idle: Duration,
    pub server_name: String,
    pub instructions: Option<String>,
    /// How long a 2026-07-28 client may treat a list (and `server/discover`) as fresh
    /// (`ttlMs`); changes within it are announced on `subscriptions/listen`.
    pub list_ttl: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            in_flight_cap: 64,
            max_body_bytes: 4 * 1024 * 1024,
            page_size: 100,
            max_sessions: 10_000,
            max_sessions_per_key: 1_000,
            session_idle: Duration::from_secs(30 * 60),
            server_name: "ramen".into(),
            instructions: None,
            list_ttl: Duration::from_secs(60),
        }
    }
}

/// Who this node is, as reported in load reports and `/status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Identity {
    pub node_id: String,
    pub group: String,
    pub zone: String,
    /// `worker` or `worker-canary`.
    pub track: String,
}

pub struct Node {
    pub settings: Settings,
    pub identity: Identity,
    policy: ArcSwap<Policy>,
    catalog: ArcSwap<Catalog>,
    pub runtime: Runtime,
    pub sessions: Sessions,
    /// List and resource changes for 2026-07-28 `subscriptions/listen` streams.
    pub changes: Arc<Changes>,
    /// Stateless calls waiting for their client's answer (2026-07-28 multi-round-trip).
    pub parked: Parked,
    pub metrics: NodeMetrics,
    /// Where this node's calls are recorded (off outside a placement).
    pub calls: crate::call_log::CallLog,
    in_flight: AtomicUsize,
    draining: AtomicBool,
    loaded_commit: Mutex<String>,
}

/// A claim on one of the node's in-flight slots, released on drop.
pub struct Slot {
    node: Arc<Node>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.node.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.node.metrics.in_flight.dec();
    }
}

impl Node {
    pub fn new(
        settings: Settings,
        identity: Identity,
        policy: Policy,
        runtime: Runtime,
        metrics: NodeMetrics,
    ) -> Self {
        Self {
            parked: Parked::new(&identity.node_id, settings.max_sessions),
            settings,
            identity,
            policy: ArcSwap::from_pointee(policy),
            catalog: ArcSwap::from_pointee(Catalog::default()),
            runtime,
            sessions: Sessions::default(),
            changes: Arc::default(),
            metrics,
            calls: crate::call_log::CallLog::default(),
            in_flight: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            loaded_commit: Mutex::new(String::new()),
        }
    }

    /// Records this node's calls into `calls`.
    pub fn with_call_log(mut self, calls: crate::call_log::CallLog) -> Self {
        self.calls = calls;
        self
    }

    pub fn policy(&self) -> Arc<Policy> {
        self.policy.load_full()
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.load_full()
    }

    /// Takes an in-flight slot, or `None` when the node is at its cap.
    pub fn try_slot(self: &Arc<Self>) -> Option<Slot> {
        let cap = self.settings.in_flight_cap;
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < cap).then_some(n + 1))
            .ok()?;
        self.metrics.in_flight.inc();
        Some(Slot { node: self.clone() })
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
        // Listen streams end gracefully now: their clients reconnect through the edge,
        // which no longer routes here.
        self.changes.publish(Change::Closing);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Ready = the runtime serves a loaded snapshot and the node is not draining.
    pub fn is_ready(&self) -> bool {
        !self.is_draining() && self.runtime.is_ready()
    }

    pub fn loaded_commit(&self) -> String {
        self.loaded_commit.lock().clone()
    }

    /// Installs a new package report (after a reload or a runtime restart).
    pub fn set_report(&self, report: Arc<Report>, commit: Option<&str>) {
        if let Some(commit) = commit {
            *self.loaded_commit.lock() = commit.to_owned();
        }
        let before = self.catalog();
        self.catalog.store(Arc::new(Catalog::new(report)));
        self.announce_changes(&before, &self.policy());
    }

    /// Applies a new policy live; open sessions hear about lists that changed.
    pub fn set_policy(&self, policy: Policy) {
        let before = self.policy();
        self.policy.store(Arc::new(policy));
        self.announce_changes(&self.catalog(), &before);
    }

    /// Compares what callers could see before with what they see now, and sends the
    /// matching `notifications/*/list_changed` to every open session and listen stream.
    fn announce_changes(&self, catalog_before: &Catalog, policy_before: &Policy) {
        let catalog = self.catalog();
        let policy = self.policy();
        let changes = [
            (Kind::Tools, "notifications/tools/list_changed", Change::Tools),
            (Kind::Prompts, "notifications/prompts/list_changed", Change::Prompts),
            (Kind::Resources, "notifications/resources/list_changed", Change::Resources),
        ];
        // New rules may change any caller's lists: every list counts as changed.
        let rules_changed = policy.source.auth.rules != policy_before.source.auth.rules;
        let all = ramen_call_rules::Grant::Everything;
        for (kind, method, change) in changes {
            let before: Vec<_> = catalog_before.visible(kind, policy_before, &all).collect();
            let now: Vec<_> = catalog.visible(kind, &policy, &all).collect();
            let templates_changed = kind == Kind::Resources
                && !catalog_before
                    .visible(Kind::ResourceTemplates, policy_before, &all)
                    .eq(catalog.visible(Kind::ResourceTemplates, &policy, &all));
            if before != now || templates_changed || rules_changed {
                self.sessions.broadcast(sse_event(&jsonrpc::notification(method, None)));
                self.changes.publish(change);
            }
        }
    }
}
