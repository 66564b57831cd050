//! What crosses the provider port.

use std::collections::BTreeMap;
use std::time::Duration;

use ramen_node_contract::SnapshotRef;
use serde::{Deserialize, Serialize};

use crate::model::{TrackKind, WorkerPhase};

/// Names of a placement's resources on its provider.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementNames {
    /// Identity the workers run as: a GCP service account email, an AWS IAM role ARN, or the
    /// local user.
    pub service_account: String,
    /// The route on the zone's edge.
    pub route: String,
}

/// What a track's workers (re)start with. Holds secret values: `Debug` prints names only.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigTemplate {
    pub environment: String,
    pub snapshot: Option<SnapshotRef>,
    /// Secrets scoped to the environment and zone, as environment variables of the group's code.
    pub secrets: BTreeMap<String, String>,
    pub verbose: bool,
    /// TCP ports the group's code may connect to (from its egress restrictions); `None` in a
    /// template written before there were any: the web ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ports: Option<Vec<u16>>,
}

impl std::fmt::Debug for ConfigTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigTemplate")
            .field("environment", &self.environment)
            .field("snapshot", &self.snapshot)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("verbose", &self.verbose)
            .field("connect_ports", &self.connect_ports)
            .finish()
    }
}

impl ConfigTemplate {
    pub fn commit(&self) -> &str {
        self.snapshot.as_ref().map_or("", |s| s.commit.as_str())
    }

    /// How the node confines the group's code: the group's ports, `enabled` as the zone says.
    pub fn sandbox(&self, enabled: bool) -> ramen_node_contract::SandboxConfig {
        let default = ramen_node_contract::SandboxConfig::default();
        ramen_node_contract::SandboxConfig {
            enabled,
            connect_ports: self.connect_ports.clone().unwrap_or(default.connect_ports),
        }
    }
}

/// Which config a rollout runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateChoice {
    /// The last config written (a deploy's restart).
    Adopt,
    /// What the track runs now (scale, or a roll after an IP-rule or size change); the written
    /// config when the track never ran.
    Keep,
}

#[derive(Clone, Debug)]
pub struct RolloutPlan {
    pub track: TrackKind,
    pub replicas: u32,
    pub template: TemplateChoice,
    /// Restart the workers that already run (one at a time); new ones always start fresh.
    pub restart_existing: bool,
    pub timeout: Duration,
}

/// A worker as its provider sees it now.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub id: String,
    pub track: TrackKind,
    pub state: WorkerPhase,
    pub reason: String,
    pub mcp_address: String,
    /// `@name` of the worker's abstract Unix socket on the zone's host (local zones); empty
    /// when it has none.
    pub mcp_local: String,
    pub admin_address: String,
    pub grpc_address: String,
    pub loaded_commit: String,
    pub restarts: u32,
    pub started_at_ms: i64,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub last_log_lines: Vec<String>,
    pub limits: String,
}

impl WorkerView {
    pub fn is_ready(&self) -> bool {
        self.state == WorkerPhase::Ready
    }
}

/// The workers that take new requests: a placement's ready stable workers; while it has none
/// (a track of one restarting in a deploy, a crashed worker being replaced), its ready
/// canaries, which run the commit that passed the smoke test, rather than no one. The local
/// edge routes to these, and a cloud route registers them.
pub fn serving(workers: &[WorkerView]) -> Vec<&WorkerView> {
    let ready = |track| workers.iter().filter(move |w| w.is_ready() && w.track == track);
    let stable: Vec<&WorkerView> = ready(TrackKind::Worker).collect();
    if stable.is_empty() { ready(TrackKind::Canary).collect() } else { stable }
}

/// A worker that did not become ready, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct NotReadyWorker {
    pub id: String,
    /// Exit code, scheduler reason, or the readiness failure.
    pub reason: String,
    pub exit_code: Option<i32>,
    pub last_log_lines: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct RolloutReport {
    pub ready: bool,
    pub workers: Vec<WorkerView>,
    pub not_ready: Vec<NotReadyWorker>,
    /// The commit the track runs after the rollout.
    pub commit: String,
}

/// How a live-policy push went: workers that did not take it get it at their next start.
#[derive(Clone, Debug, Default)]
pub struct PolicyPush {
    pub pushed: u32,
    pub failed: Vec<(String, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeardownAction {
    DrainWorkers,
    RemoveRoute,
    RemoveEdgeRule,
    RemoveIdentity,
    RemoveNamespace,
}

/// The placement a teardown step works on, from the teardown record (the placement record is
/// gone before the last steps run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeardownTarget {
    pub group: String,
    pub zone: String,
    /// The zone's location: which cluster holds a Kubernetes zone's resources.
    pub region: String,
    /// The group's other live placements on the same provider (for `RemoveEdgeRule`: the
    /// group's edge rule keeps what they allow).
    pub edge_members: Vec<EdgeMember>,
}

/// One placement of a group as its shared edge rule sees it: where, and what it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeMember {
    pub zone: String,
    pub region: String,
    /// Normalised CIDRs; empty allows every source.
    pub ip_rules: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    Done(String),
    /// Not finished yet (e.g. `namespace Terminating for 4m`): ask again later.
    Waiting(String),
}

/// Reported by providers as workers change, so the zone-manager can record them and publish
/// `WorkerChanged`.
#[derive(Clone, Debug)]
pub enum WorkerEvent {
    Changed { group: String, zone: String, worker: Box<WorkerView> },
    Removed { group: String, zone: String, id: String, track: TrackKind },
}

pub type WorkerEvents = tokio::sync::mpsc::UnboundedSender<WorkerEvent>;
