//! The zone-manager's own records, as stored (JSON in the document store). Wire types stay in
//! `api::conversions`; the few `ramen.common.v1` messages used here (key hashes, package
//! reports) are the ones that package defines as storable JSON.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (how every record stores time).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Local,
    Gcp,
    Aws,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Gcp => "gcp",
            Self::Aws => "aws",
        }
    }
}

/// Worker sizes: `s` 250m CPU / 512Mi, `m` 500m / 1Gi, `l` 1 CPU / 2Gi.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeClass {
    S,
    M,
    L,
}

impl SizeClass {
    pub const ALL: [SizeClass; 3] = [SizeClass::S, SizeClass::M, SizeClass::L];

    pub fn name(self) -> &'static str {
        match self {
            Self::S => "s",
            Self::M => "m",
            Self::L => "l",
        }
    }

    pub fn cpu_millis(self) -> u32 {
        match self {
            Self::S => 250,
            Self::M => 500,
            Self::L => 1000,
        }
    }

    pub fn memory_bytes(self) -> u64 {
        const MI: u64 = 1024 * 1024;
        match self {
            Self::S => 512 * MI,
            Self::M => 1024 * MI,
            Self::L => 2048 * MI,
        }
    }

    pub fn describe(self) -> String {
        format!("{} ({}m CPU, {}Mi)", self.name(), self.cpu_millis(), self.memory_bytes() >> 20)
    }
}

/// The two worker tracks of a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TrackKind {
    #[serde(rename = "worker")]
    Worker,
    #[serde(rename = "worker-canary")]
    Canary,
}

impl TrackKind {
    pub const BOTH: [TrackKind; 2] = [TrackKind::Canary, TrackKind::Worker];

    /// `worker` or `worker-canary`: the node's track name and the worker id prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Canary => "worker-canary",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "worker" => Some(Self::Worker),
            "worker-canary" => Some(Self::Canary),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementPhase {
    Pending,
    Provisioning,
    Ready,
    Degraded,
    TearingDown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerPhase {
    Starting,
    Ready,
    NotReady,
    Draining,
    Exited,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneRecord {
    pub name: String,
    pub provider: ProviderKind,
    #[serde(default)]
    pub region: String,
    pub allowed_sizes: Vec<SizeClass>,
    pub created_at_ms: i64,
    #[serde(default)]
    pub deleting: bool,
}

impl ZoneRecord {
    pub fn allows(&self, size: SizeClass) -> bool {
        self.allowed_sizes.contains(&size)
    }
}

mod placement;
mod records;

pub use placement::{PlacementRecord, TrackRecord, placement_id};
pub use records::{PackagesRecord, WorkerRecord};
