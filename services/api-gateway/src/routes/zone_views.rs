//! JSON shapes of the zone-manager's answers (zones, placements, workers) and the parsing of
//! the lowercase words clients send (`local|gcp|aws`, `s|m|l`). Enums are lowercase words.

use ramen_proto::common::v1::{Provider, Size};
use ramen_proto::zone::v1 as pb;
use serde::Serialize;
use utoipa::ToSchema;

use super::views::{ProviderName, time};
use crate::error::ApiError;

/// `PREFIX_SOME_NAME` → `some_name`: the JSON spelling of every proto enum.
pub fn word(proto_name: &str, prefix: &str) -> String {
    proto_name.strip_prefix(prefix).unwrap_or(proto_name).to_ascii_lowercase()
}

/// A provider name from a request, or a 400 naming the field and the choices.
/// Exact words, as the document's `enum` lists them.
pub fn parse_provider(value: &str) -> Result<Provider, ApiError> {
    match value {
        "local" => Ok(Provider::Local),
        "gcp" => Ok(Provider::Gcp),
        "aws" => Ok(Provider::Aws),
        _ => Err(ApiError::invalid(format!(
            "provider: `{value}` is not a provider (one of local, gcp, aws)"
        ))),
    }
}

/// A size name from a request, or a 400 naming the field and the choices.
/// Exact words, as the document's `enum` lists them.
pub fn parse_size(field: &str, value: &str) -> Result<Size, ApiError> {
    match value {
        "s" => Ok(Size::S),
        "m" => Ok(Size::M),
        "l" => Ok(Size::L),
        _ => Err(ApiError::invalid(format!("{field}: `{value}` is not a size (one of s, m, l)"))),
    }
}

fn size_word(size: i32) -> String {
    Size::try_from(size).map_or_else(|_| "unspecified".into(), |s| word(s.as_str_name(), "SIZE_"))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ZoneView {
    pub name: String,
    pub provider: Option<ProviderName>,
    /// GCP zone (`us-central1-a`) or AWS availability zone (`us-east-1a`); empty for local.
    pub region: String,
    /// `s`, `m`, `l`; empty = every size.
    pub allowed_sizes: Vec<String>,
    pub created_at: Option<String>,
    /// True while its teardown runs.
    pub deleting: bool,
}

impl From<pb::Zone> for ZoneView {
    fn from(z: pb::Zone) -> Self {
        Self {
            provider: ProviderName::from_pb(z.provider()),
            allowed_sizes: z.allowed_sizes.iter().map(|s| size_word(*s)).collect(),
            created_at: time(z.created_at.as_ref()),
            name: z.name,
            region: z.region,
            deleting: z.deleting,
        }
    }
}

/// Worker counts of one group in one zone, counted from the running workers.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupWorkersView {
    pub group: String,
    /// Ready stable workers.
    pub worker: u32,
    /// Ready canary workers.
    pub worker_canary: u32,
    /// Present but not ready (starting, failing, draining).
    pub not_ready: u32,
    /// The configured count (autoscaler minimum).
    pub desired: u32,
}

/// A row of the zones page: the zone, and worker counts for the groups the caller may see.
#[derive(Debug, Serialize, ToSchema)]
pub struct ZoneSummaryView {
    #[serde(flatten)]
    pub zone: ZoneView,
    /// Ready workers (both tracks) over the groups listed.
    pub workers: u32,
    pub groups: Vec<GroupWorkersView>,
}

impl ZoneSummaryView {
    /// Keeps only the counts of groups `visible` allows (`None`: all).
    pub fn new(summary: pb::ZoneSummary, visible: Option<&[String]>) -> Self {
        let groups: Vec<GroupWorkersView> = summary
            .groups
            .into_iter()
            .filter(|g| visible.is_none_or(|v| v.contains(&g.group)))
            .map(|g| GroupWorkersView {
                group: g.group,
                worker: g.worker,
                worker_canary: g.worker_canary,
                not_ready: g.not_ready,
                desired: g.desired,
            })
            .collect();
        Self {
            zone: ZoneView::from(summary.zone.unwrap_or_default()),
            workers: groups.iter().map(|g| g.worker + g.worker_canary).sum(),
            groups,
        }
    }
}

/// A group in a zone: its namespace, route, rules, counts, size and status.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlacementView {
    pub group: String,
    pub zone: String,
    /// `ramen-<group>-<zone>`.
    pub namespace: String,
    pub service_account: String,
    pub route: String,
    /// Normalised CIDRs; empty allows every source.
    pub ip_rules: Vec<String>,
    /// Autoscaler minimum of stable workers.
    pub worker_count: u32,
    /// Autoscaler maximum (twice the count).
    pub max_workers: u32,
    /// `s`, `m` or `l`.
    pub size: String,
    pub disabled_packages: Vec<String>,
    /// `pending`, `provisioning`, `ready`, `degraded`, `tearing_down`.
    pub status: String,
    pub status_message: String,
    /// Commit of the last config written.
    pub config_commit: String,
    pub policy_version: u64,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl From<pb::Placement> for PlacementView {
    fn from(p: pb::Placement) -> Self {
        Self {
            size: size_word(p.size),
            status: word(p.status().as_str_name(), "PLACEMENT_STATUS_"),
            created_at: time(p.created_at.as_ref()),
            updated_at: time(p.updated_at.as_ref()),
            group: p.group,
            zone: p.zone,
            namespace: p.namespace,
            service_account: p.service_account,
            route: p.route,
            ip_rules: p.ip_rules,
            worker_count: p.worker_count,
            max_workers: p.max_workers,
            disabled_packages: p.disabled_packages,
            status_message: p.status_message,
            config_commit: p.config_commit,
            policy_version: p.policy_version,
        }
    }
}

/// The answer to an IP-rule change: the placement, and whether its workers were rolled.
#[derive(Debug, Serialize, ToSchema)]
pub struct IpRulesView {
    #[serde(flatten)]
    pub placement: PlacementView,
    /// False when the rules did not change.
    pub rolled: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkerView {
    pub id: String,
    pub group: String,
    pub zone: String,
    /// `worker` or `worker_canary`.
    pub track: String,
    /// `starting`, `ready`, `not_ready`, `draining`, `exited`.
    pub state: String,
    pub reason: String,
    pub mcp_address: String,
    pub admin_address: String,
    pub loaded_commit: String,
    pub restarts: u32,
    pub started_at: Option<String>,
}

impl From<pb::Worker> for WorkerView {
    fn from(w: pb::Worker) -> Self {
        Self {
            track: word(w.track().as_str_name(), "TRACK_"),
            state: word(w.state().as_str_name(), "WORKER_STATE_"),
            started_at: time(w.started_at.as_ref()),
            id: w.id,
            group: w.group,
            zone: w.zone,
            reason: w.reason,
            mcp_address: w.mcp_address,
            admin_address: w.admin_address,
            loaded_commit: w.loaded_commit,
            restarts: w.restarts,
        }
    }
}
