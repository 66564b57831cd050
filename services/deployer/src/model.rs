//! Stored records of groups, environments and the Config settings (collections
//! `deployer_groups`, `deployer_environments`, `deployer_settings`). Jobs are in `jobs::model`.

use serde::{Deserialize, Serialize};

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Limits on what a group's workers may do (enforced by the zone providers).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Restrictions {
    pub max_workers_per_zone: u32,
    pub allowed_zones: Vec<String>,
    pub egress_allow: Vec<String>,
    pub max_in_flight_per_node: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupPhase {
    #[default]
    Active,
    /// The deletion saga runs; the group accepts no changes.
    Deleting,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupRecord {
    pub name: String,
    /// Never holds a credential (validated on the way in).
    pub repo_url: String,
    pub default_ref: String,
    pub worker_image: String,
    pub restrictions: Restrictions,
    pub github_app_installation_id: i64,
    pub status: GroupPhase,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// Progress of the deletion saga, once started.
    pub deletion: Option<Deletion>,
}

impl GroupRecord {
    pub fn bucket_prefix(&self) -> String {
        bucket_prefix(&self.name)
    }
}

pub fn bucket_prefix(group: &str) -> String {
    format!("groups/{group}/")
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SagaPhase {
    #[default]
    Running,
    Done,
    Retrying,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
    Skipped,
    Cancelled,
}

impl Status {
    pub fn is_done(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Cancelled)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SagaStepRecord {
    pub name: String,
    pub status: Status,
    pub detail: String,
    pub updated_at_ms: i64,
}

/// The group deletion saga's progress (steps in `deletion::STEPS` order).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Deletion {
    pub state: SagaPhase,
    pub steps: Vec<SagaStepRecord>,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub error: String,
    pub requested_by: String,
    pub zones: Vec<String>,
}

/// The last deploy of an environment, flattened into its row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LastDeploy {
    pub job_id: String,
    pub outcome: crate::jobs::model::JobState,
    pub git_ref: String,
    pub commit: String,
    pub finished_at_ms: i64,
    pub error: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentRecord {
    pub group: String,
    pub name: String,
    pub git_ref: String,
    pub zones: Vec<String>,
    pub verbose: bool,
    pub blocked: Vec<String>,
    pub last_deploy: Option<LastDeploy>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub deleting: bool,
    /// Set with `deleting`: zones no other environment of the group used, being torn down.
    pub released_zones: Vec<String>,
    /// The environment's own MCP authentication (unset or mode unspecified: the platform
    /// default); resolved for the nodes and the edge by `McpAuthDefaults::resolve`.
    pub auth: Option<ramen_proto::common::v1::McpAuth>,
    /// Whether a deploy whose surface changed waits for review. Records stored before the
    /// setting existed read `allow`, what those deploys did.
    pub surface_changes: SurfaceChanges,
    /// Whether call records keep each call's arguments; reaches the nodes at the next deploy.
    /// Records stored before the setting existed read `false`, what their nodes did.
    pub record_arguments: bool,
}

/// What a deploy does when the canary's surface differs from stable's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceChanges {
    /// Logged; the deploy goes on.
    #[default]
    Allow,
    /// The deploy waits in the REVIEW step for a group admin.
    Review,
}

impl SurfaceChanges {
    /// A new environment's default: `prod` reviews, the others allow.
    pub fn default_for(environment: &str) -> Self {
        if environment == "prod" { Self::Review } else { Self::Allow }
    }
}

/// `<group>.<environment>`: both are DNS labels, so the dot cannot be ambiguous.
pub fn environment_id(group: &str, name: &str) -> String {
    format!("{group}.{name}")
}

/// The one document of `deployer_settings` (id [`SETTINGS_ID`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SettingsRecord {
    pub github_app_id: i64,
    /// Sealed under the secrets key; never returned.
    pub github_app_private_key: Option<ramen_crypto::seal::Sealed>,
    pub auto_rebalance_enabled: bool,
    pub auto_rebalance_interval_seconds: u32,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

pub const SETTINGS_ID: &str = "global";
/// Associated data of the sealed App key, so it opens only as this record.
pub const APP_KEY_AAD: &str = "deployer_settings/global/github_app_private_key";
pub const DEFAULT_REBALANCE_INTERVAL_SECONDS: u32 = 300;
