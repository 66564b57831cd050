//! The placement record (group × zone) and its tracks.

use std::collections::BTreeMap;

use ramen_proto::common::v1::{KeyHash, McpAuth};
use serde::{Deserialize, Serialize};

use super::{PlacementPhase, ProviderKind, SizeClass, TrackKind};

/// One track's desired state: how many workers, and the commit its last successful rollout
/// brought (what its workers run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrackRecord {
    pub replicas: u32,
    pub commit: String,
}

/// What a group has in a zone. Secrets are not here: the provider keeps them (a Kubernetes
/// Secret, or a 0600 file in the local working directory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlacementRecord {
    pub group: String,
    pub zone: String,
    pub provider: ProviderKind,
    pub region: String,
    pub namespace: String,
    pub service_account: String,
    pub route: String,
    /// Normalised CIDRs; empty allows every source.
    pub ip_rules: Vec<String>,
    /// Autoscaler minimum of the stable track; the maximum is twice it.
    pub worker_count: u32,
    pub size: SizeClass,
    pub disabled_packages: Vec<String>,
    pub blocked: Vec<String>,
    /// The keys auth lists for the environment × zone (pushed again on `McpKeyChanged`).
    pub key_hashes: Vec<KeyHash>,
    /// Keys of the deploy in progress (its smoke key), accepted beside auth's until cleared.
    #[serde(default)]
    pub deploy_keys: Vec<KeyHash>,
    /// The environment's MCP authentication, as the deployer resolved it (unset: keys only).
    #[serde(default)]
    pub auth: Option<McpAuth>,
    /// Whether call records keep arguments (the environment's, from the last config).
    #[serde(default)]
    pub record_arguments: bool,
    pub status: PlacementPhase,
    pub status_message: String,
    /// Environment and commit of the last config written (what the next restart loads).
    pub environment: String,
    pub config_commit: String,
    pub verbose: bool,
    pub policy_version: u64,
    pub worker: TrackRecord,
    pub canary: TrackRecord,
    /// The local edge's per-worker weights (absent = the default weight).
    pub edge_weights: BTreeMap<String, u32>,
    /// The cloud resources ramen made for the placement (ARNs), as its provider last answered.
    pub cloud_resources: Vec<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// Grows with every write: lets a provider ignore a record older than one it has seen.
    pub revision: u64,
}

impl Default for PlacementRecord {
    fn default() -> Self {
        Self {
            group: String::new(),
            zone: String::new(),
            provider: ProviderKind::Local,
            region: String::new(),
            namespace: String::new(),
            service_account: String::new(),
            route: String::new(),
            ip_rules: Vec::new(),
            worker_count: 1,
            size: SizeClass::S,
            disabled_packages: Vec::new(),
            blocked: Vec::new(),
            key_hashes: Vec::new(),
            deploy_keys: Vec::new(),
            auth: None,
            record_arguments: false,
            status: PlacementPhase::Pending,
            status_message: String::new(),
            environment: String::new(),
            config_commit: String::new(),
            verbose: false,
            policy_version: 0,
            worker: TrackRecord::default(),
            canary: TrackRecord::default(),
            edge_weights: BTreeMap::new(),
            cloud_resources: Vec::new(),
            created_at_ms: 0,
            updated_at_ms: 0,
            revision: 0,
        }
    }
}

impl PlacementRecord {
    pub fn id(&self) -> String {
        placement_id(&self.group, &self.zone)
    }

    pub fn max_workers(&self) -> u32 {
        self.worker_count.saturating_mul(2)
    }

    pub fn track(&self, track: TrackKind) -> &TrackRecord {
        match track {
            TrackKind::Worker => &self.worker,
            TrackKind::Canary => &self.canary,
        }
    }

    pub fn track_mut(&mut self, track: TrackKind) -> &mut TrackRecord {
        match track {
            TrackKind::Worker => &mut self.worker,
            TrackKind::Canary => &mut self.canary,
        }
    }

    /// The replicas a track starts with when a deploy restarts it from zero.
    pub fn default_replicas(&self, track: TrackKind) -> u32 {
        match track {
            TrackKind::Worker => self.worker_count.max(1),
            TrackKind::Canary => 1,
        }
    }

    pub fn label(&self) -> String {
        format!("{}/{}", self.group, self.zone)
    }
}

pub fn placement_id(group: &str, zone: &str) -> String {
    format!("{group}/{zone}")
}
