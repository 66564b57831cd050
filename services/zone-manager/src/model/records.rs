//! What providers report about workers, and what zones report about packages.

use ramen_proto::common::v1::PackageReport;
use serde::{Deserialize, Serialize};

use super::{TrackKind, WorkerPhase};

/// A worker as last reported by its provider (`zone_workers`): what ListWorkers falls back to
/// and what a restarted control plane knows about processes it did not start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerRecord {
    pub group: String,
    pub zone: String,
    pub id: String,
    pub track: TrackKind,
    pub state: WorkerPhase,
    pub reason: String,
    pub mcp_address: String,
    pub admin_address: String,
    pub grpc_address: String,
    pub loaded_commit: String,
    pub restarts: u32,
    pub started_at_ms: i64,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub last_log_lines: Vec<String>,
    /// The resource limits applied, or why they are only recorded.
    pub limits: String,
    pub updated_at_ms: i64,
}

impl Default for WorkerRecord {
    fn default() -> Self {
        Self {
            group: String::new(),
            zone: String::new(),
            id: String::new(),
            track: TrackKind::Worker,
            state: WorkerPhase::Starting,
            reason: String::new(),
            mcp_address: String::new(),
            admin_address: String::new(),
            grpc_address: String::new(),
            loaded_commit: String::new(),
            restarts: 0,
            started_at_ms: 0,
            pid: None,
            exit_code: None,
            last_log_lines: Vec::new(),
            limits: String::new(),
            updated_at_ms: 0,
        }
    }
}

impl WorkerRecord {
    pub fn record_id(&self) -> String {
        format!("{}/{}/{}", self.group, self.zone, self.id)
    }
}

/// The package report one zone returned for a group after a deploy (`zone_packages`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PackagesRecord {
    pub group: String,
    pub zone: String,
    pub environment: String,
    pub commit: String,
    pub reported_at_ms: i64,
    pub packages: Vec<PackageReport>,
}
