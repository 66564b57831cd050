//! JSON shapes of the deployer's groups, group deletions and environments.

use ramen_proto::common::v1::JobState;
use ramen_proto::deployer::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::time;
use super::zone_views::word;

/// Limits on what a group's workers may do or use. In a request, absent fields are 0 / empty.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RestrictionsView {
    /// Upper bound on any placement's worker count; 0 = none.
    pub max_workers_per_zone: u32,
    /// Zones the group may use; empty = any zone that exists.
    pub allowed_zones: Vec<String>,
    /// Where the group's code may open TCP connections: `5432` (a port), `db.internal:5432` or
    /// `10.0.0.0/8:5432` (a port to a place), `api.example.com` (ports 80 and 443 to a place).
    /// The workers' sandbox enforces the ports on every provider; empty = ports 80 and 443.
    pub egress_allow: Vec<String>,
    /// In-flight call cap per node; 0 = the node default.
    pub max_in_flight_per_node: u32,
}

impl From<pb::GroupRestrictions> for RestrictionsView {
    fn from(r: pb::GroupRestrictions) -> Self {
        Self {
            max_workers_per_zone: r.max_workers_per_zone,
            allowed_zones: r.allowed_zones,
            egress_allow: r.egress_allow,
            max_in_flight_per_node: r.max_in_flight_per_node,
        }
    }
}

impl RestrictionsView {
    pub fn into_pb(self) -> pb::GroupRestrictions {
        pb::GroupRestrictions {
            max_workers_per_zone: self.max_workers_per_zone,
            allowed_zones: self.allowed_zones,
            egress_allow: self.egress_allow,
            max_in_flight_per_node: self.max_in_flight_per_node,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupView {
    pub name: String,
    pub repo_url: String,
    pub default_ref: String,
    /// `groups/<name>/`.
    pub bucket_prefix: String,
    /// Empty = the platform default.
    pub worker_image: String,
    pub restrictions: RestrictionsView,
    /// GitHub App installation id for private repos; absent = none.
    pub github_app_installation_id: Option<i64>,
    /// `active` or `deleting`.
    pub status: String,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl From<pb::Group> for GroupView {
    fn from(g: pb::Group) -> Self {
        Self {
            status: word(g.status().as_str_name(), "GROUP_STATUS_"),
            restrictions: RestrictionsView::from(g.restrictions.unwrap_or_default()),
            github_app_installation_id: Some(g.github_app_installation_id).filter(|id| *id != 0),
            created_at: time(g.created_at.as_ref()),
            updated_at: time(g.updated_at.as_ref()),
            name: g.name,
            repo_url: g.repo_url,
            default_ref: g.default_ref,
            bucket_prefix: g.bucket_prefix,
            worker_image: g.worker_image,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SagaStepView {
    /// `placements`, `bucket_prefix`, `auth`, `records`.
    pub name: String,
    /// `pending`, `running`, `succeeded`, `failed`, `skipped`, `cancelled`.
    pub status: String,
    pub detail: String,
    pub updated_at: Option<String>,
}

/// Progress of a group deletion (every step is retried until it succeeds).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletionView {
    pub group: String,
    /// `running`, `done`, `retrying`.
    pub state: String,
    pub steps: Vec<SagaStepView>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Which step failed and why, while `retrying`.
    pub error: String,
}

impl From<pb::GroupDeletion> for DeletionView {
    fn from(d: pb::GroupDeletion) -> Self {
        let state = word(d.state().as_str_name(), "SAGA_STATE_");
        let steps = d
            .steps
            .into_iter()
            .map(|s| SagaStepView {
                status: word(s.status().as_str_name(), "STEP_STATUS_"),
                updated_at: time(s.updated_at.as_ref()),
                name: s.name,
                detail: s.detail,
            })
            .collect();
        Self {
            state,
            started_at: time(d.started_at.as_ref()),
            finished_at: time(d.finished_at.as_ref()),
            group: d.group,
            steps,
            error: d.error,
        }
    }
}

/// The last deploy of an environment.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeployResultView {
    pub job_id: String,
    /// `succeeded`, `failed`, `cancelled`, `dead_lettered`, ...
    pub outcome: String,
    pub git_ref: String,
    pub commit: String,
    pub finished_at: Option<String>,
    /// Empty on success.
    pub error: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EnvironmentView {
    pub group: String,
    pub name: String,
    pub git_ref: String,
    pub zones: Vec<String>,
    pub verbose: bool,
    /// Blocked packages (`pkg`) or tools (`pkg.tool`).
    pub blocked: Vec<String>,
    /// Absent before the first deploy.
    pub last_deploy: Option<DeployResultView>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// True while its teardown runs after a delete.
    pub deleting: bool,
    /// How its MCP clients authenticate and who may call what.
    pub auth: super::environment_auth::McpAuthView,
    /// `allow` or `review`: whether a deploy that changes the tool surface waits for review.
    pub surface_changes: String,
    /// Whether call records keep each call's arguments (secrets redacted). A change reaches
    /// the nodes at the next deploy.
    pub record_arguments: bool,
}

pub fn job_state(state: JobState) -> String {
    word(state.as_str_name(), "JOB_STATE_")
}

impl From<pb::Environment> for EnvironmentView {
    fn from(e: pb::Environment) -> Self {
        let surface_changes = word(e.surface_changes().as_str_name(), "SURFACE_CHANGES_");
        let last_deploy = e.last_deploy.map(|d| DeployResultView {
            outcome: job_state(d.outcome()),
            finished_at: time(d.finished_at.as_ref()),
            job_id: d.job_id,
            git_ref: d.git_ref,
            commit: d.commit,
            error: d.error,
        });
        Self {
            created_at: time(e.created_at.as_ref()),
            updated_at: time(e.updated_at.as_ref()),
            surface_changes,
            group: e.group,
            name: e.name,
            git_ref: e.git_ref,
            zones: e.zones,
            verbose: e.verbose,
            blocked: e.blocked,
            last_deploy,
            deleting: e.deleting,
            record_arguments: e.record_arguments,
            auth: super::environment_auth::McpAuthView::from_wire(e.auth, e.auth_inherited),
        }
    }
}
