//! What the pages read from the REST API: the JSON answers decoded into the fields the pages
//! show. Every field defaults, so a field the API adds later never breaks a page.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_page_token: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct User {
    pub id: String,
    pub email: String,
    pub super_admin: bool,
    pub must_change_password: bool,
    pub last_login_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Membership {
    pub group: String,
    pub user_id: String,
    pub email: String,
    /// `admin` or `member`.
    pub role: Option<String>,
    pub created_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Me {
    pub user: Option<User>,
    pub memberships: Vec<Membership>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct GroupWorkers {
    pub group: String,
    pub worker: u32,
    pub worker_canary: u32,
    pub not_ready: u32,
    pub desired: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ZoneSummary {
    pub name: String,
    pub provider: Option<String>,
    pub region: String,
    pub allowed_sizes: Vec<String>,
    pub created_at: Option<String>,
    pub deleting: bool,
    pub workers: u32,
    pub groups: Vec<GroupWorkers>,
}

#[derive(Debug, Default, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct Restrictions {
    pub max_workers_per_zone: u32,
    pub allowed_zones: Vec<String>,
    pub egress_allow: Vec<String>,
    pub max_in_flight_per_node: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Group {
    pub name: String,
    pub repo_url: String,
    pub default_ref: String,
    pub bucket_prefix: String,
    pub worker_image: String,
    pub restrictions: Restrictions,
    pub github_app_installation_id: Option<i64>,
    pub status: String,
    pub created_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DeployResult {
    pub job_id: String,
    pub outcome: String,
    pub git_ref: String,
    pub commit: String,
    pub finished_at: Option<String>,
    pub error: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub group: String,
    pub name: String,
    pub git_ref: String,
    pub zones: Vec<String>,
    pub verbose: bool,
    pub blocked: Vec<String>,
    pub last_deploy: Option<DeployResult>,
    pub deleting: bool,
    pub auth: EnvironmentAuth,
    /// `allow` or `review`.
    pub surface_changes: String,
    pub record_arguments: bool,
}

/// How an environment's MCP clients authenticate (`auth` of the environment view).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct EnvironmentAuth {
    pub mode: String,
    pub inherited: bool,
    pub issuers: Vec<String>,
    pub scopes: Vec<String>,
    pub rules: Vec<serde_json::Value>,
    pub calls_per_second: u32,
    pub resource: String,
    pub metadata_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Stuck {
    pub worker: String,
    pub reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct StepRun {
    pub step: String,
    pub status: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub outcome: String,
    pub error: String,
    pub stuck: Vec<Stuck>,
    pub log: Vec<LogLine>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LogLine {
    pub at: Option<String>,
    pub text: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ZoneRun {
    pub zone: String,
    pub status: String,
    pub steps: Vec<StepRun>,
    pub surface_changes: Vec<SurfaceChange>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SurfaceChange {
    pub kind: String,
    pub name: String,
    pub change: String,
    pub item: Option<serde_json::Value>,
    pub fields: Vec<FieldChange>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FieldChange {
    pub path: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Review {
    pub decision: String,
    pub requested_at: Option<String>,
    pub expires_at: Option<String>,
    pub decided_by: String,
    pub decided_at: Option<String>,
    pub reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Job {
    pub id: String,
    pub group: String,
    pub environment: String,
    pub git_ref: String,
    pub commit: String,
    pub state: String,
    pub requested_by: String,
    pub created_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub attempt: u32,
    pub error: String,
    pub cancel_requested: bool,
    pub zones: Vec<ZoneRun>,
    pub review: Option<Review>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Placement {
    pub group: String,
    pub zone: String,
    pub namespace: String,
    pub route: String,
    pub ip_rules: Vec<String>,
    pub worker_count: u32,
    pub max_workers: u32,
    pub size: String,
    pub disabled_packages: Vec<String>,
    pub status: String,
    pub status_message: String,
    pub config_commit: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Worker {
    pub id: String,
    pub track: String,
    pub state: String,
    pub reason: String,
    pub loaded_commit: String,
    pub restarts: u32,
    pub started_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tool {
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Resource {
    pub uri: String,
    pub template: bool,
    pub name: String,
    pub description: String,
    pub mime_type: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PromptArgument {
    pub name: String,
    pub required: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Prompt {
    pub name: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Package {
    pub zone: String,
    pub name: String,
    pub disabled: bool,
    pub commit: String,
    pub reported_at: Option<String>,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub prompts: Vec<Prompt>,
    pub error: Option<String>,
    pub traceback: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Key {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub environments: Vec<String>,
    pub zones: Vec<String>,
    pub expires_at: Option<String>,
    pub created_at: Option<String>,
    pub created_by: String,
    pub revoked_at: Option<String>,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Secret {
    pub name: String,
    pub environment: String,
    pub zone: String,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

#[derive(Debug, Default, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct Rule {
    pub provider: String,
    pub permissions: Vec<String>,
    pub resources: Vec<String>,
    pub description: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ServiceAccount {
    pub rules: Vec<Rule>,
    pub version: u64,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct NodeLoad {
    pub node_id: String,
    pub track: String,
    pub in_flight: u32,
    pub cap: u32,
    pub ready: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LoadCell {
    pub group: String,
    pub zone: String,
    pub state: String,
    pub live_nodes: u32,
    pub in_flight: u32,
    pub cap: u32,
    pub utilization: f64,
    pub last_report_at: Option<String>,
    pub nodes: Vec<NodeLoad>,
    pub min_workers: u32,
    pub max_workers: u32,
    pub desired_workers: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub github_app_id: Option<i64>,
    pub github_app_private_key_set: bool,
    pub auto_rebalance_enabled: bool,
    pub auto_rebalance_interval_seconds: u32,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

/// `GET /api/service-account-bounds`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ServiceAccountBounds {
    pub aws: ProviderBounds,
    pub gcp: ProviderBounds,
    pub version: u64,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProviderBounds {
    pub permissions: Vec<String>,
    pub denied: Vec<String>,
    pub resources: Vec<String>,
    pub wildcards: bool,
    pub unscoped: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AuditEntry {
    pub id: String,
    pub at: Option<String>,
    pub actor: String,
    pub action: String,
    pub group: String,
    pub target: String,
    pub outcome: String,
    pub details: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SagaStep {
    pub name: String,
    pub status: String,
    pub detail: String,
    pub updated_at: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Deletion {
    pub group: String,
    pub state: String,
    pub steps: Vec<SagaStep>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Call {
    pub id: String,
    pub at: Option<String>,
    pub environment: String,
    pub zone: String,
    pub worker: String,
    pub caller_id: String,
    pub caller_name: String,
    pub method: String,
    pub target: String,
    pub duration_us: u64,
    pub outcome: String,
    pub error_code: i64,
    pub arguments: Option<Value>,
}

/// A usage summary (`/api/groups/{group}/usage`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub window: String,
    pub bucket_seconds: u32,
    pub since: Option<String>,
    pub until: Option<String>,
    pub total: Figures,
    pub buckets: Vec<UsageBucket>,
    pub targets: Vec<TargetUsage>,
    pub callers: Vec<CallerUsage>,
    pub truncated: bool,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Figures {
    pub calls: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct UsageBucket {
    pub start: Option<String>,
    pub figures: Figures,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TargetUsage {
    pub method: String,
    pub target: String,
    pub figures: Figures,
    pub calls_per_bucket: Vec<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CallerUsage {
    pub caller_id: String,
    pub caller_name: String,
    pub figures: Figures,
}
