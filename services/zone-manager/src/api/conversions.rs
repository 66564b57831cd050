//! Proto ⇄ domain. Wire types stop here.

use std::time::Duration;

use ramen_node_contract::SnapshotRef;
use ramen_proto::common::v1 as common;
use ramen_proto::zone::v1 as pb;

use crate::error::{Error, Result};
use crate::model::{
    PlacementPhase, PlacementRecord, ProviderKind, SizeClass, TrackKind, WorkerPhase, ZoneRecord,
};
use crate::provider::{ConfigTemplate, NotReadyWorker, WorkerView};
use crate::validate;

pub fn timestamp(ms: i64) -> Option<prost_types::Timestamp> {
    (ms > 0).then(|| prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    })
}

pub fn duration(value: Option<prost_types::Duration>) -> Result<Option<Duration>> {
    value
        .map(|d| {
            Duration::try_from(d)
                .map_err(|_| Error::invalid("timeout", "must be a positive duration"))
        })
        .transpose()
}

pub fn provider_from_proto(value: i32) -> Result<ProviderKind> {
    match common::Provider::try_from(value) {
        Ok(common::Provider::Local) => Ok(ProviderKind::Local),
        Ok(common::Provider::Gcp) => Ok(ProviderKind::Gcp),
        Ok(common::Provider::Aws) => Ok(ProviderKind::Aws),
        _ => Err(Error::invalid("provider", "must be local, gcp or aws")),
    }
}

pub fn provider_to_proto(kind: ProviderKind) -> common::Provider {
    match kind {
        ProviderKind::Local => common::Provider::Local,
        ProviderKind::Gcp => common::Provider::Gcp,
        ProviderKind::Aws => common::Provider::Aws,
    }
}

pub fn size_from_proto(field: &'static str, value: i32) -> Result<SizeClass> {
    match common::Size::try_from(value) {
        Ok(common::Size::S) => Ok(SizeClass::S),
        Ok(common::Size::M) => Ok(SizeClass::M),
        Ok(common::Size::L) => Ok(SizeClass::L),
        _ => Err(Error::invalid(
            field,
            "must be s (250m CPU, 512Mi), m (500m, 1Gi) or l (1 CPU, 2Gi)",
        )),
    }
}

pub fn size_to_proto(size: SizeClass) -> common::Size {
    match size {
        SizeClass::S => common::Size::S,
        SizeClass::M => common::Size::M,
        SizeClass::L => common::Size::L,
    }
}

pub fn track_from_proto(value: i32) -> Result<TrackKind> {
    track_filter(value)?.ok_or_else(|| Error::invalid("track", "must be worker or worker-canary"))
}

/// UNSPECIFIED = both tracks.
pub fn track_filter(value: i32) -> Result<Option<TrackKind>> {
    match common::Track::try_from(value) {
        Ok(common::Track::Unspecified) => Ok(None),
        Ok(common::Track::Worker) => Ok(Some(TrackKind::Worker)),
        Ok(common::Track::WorkerCanary) => Ok(Some(TrackKind::Canary)),
        Err(_) => Err(Error::invalid("track", format!("unknown track {value}"))),
    }
}

pub fn track_to_proto(track: TrackKind) -> common::Track {
    match track {
        TrackKind::Worker => common::Track::Worker,
        TrackKind::Canary => common::Track::WorkerCanary,
    }
}

pub fn worker_state(phase: WorkerPhase) -> common::WorkerState {
    match phase {
        WorkerPhase::Starting => common::WorkerState::Starting,
        WorkerPhase::Ready => common::WorkerState::Ready,
        WorkerPhase::NotReady => common::WorkerState::NotReady,
        WorkerPhase::Draining => common::WorkerState::Draining,
        WorkerPhase::Exited => common::WorkerState::Exited,
    }
}

pub fn placement_status(phase: PlacementPhase) -> common::PlacementStatus {
    match phase {
        PlacementPhase::Pending => common::PlacementStatus::Pending,
        PlacementPhase::Provisioning => common::PlacementStatus::Provisioning,
        PlacementPhase::Ready => common::PlacementStatus::Ready,
        PlacementPhase::Degraded => common::PlacementStatus::Degraded,
        PlacementPhase::TearingDown => common::PlacementStatus::TearingDown,
    }
}

pub fn zone(record: &ZoneRecord) -> pb::Zone {
    pb::Zone {
        name: record.name.clone(),
        provider: provider_to_proto(record.provider) as i32,
        region: record.region.clone(),
        allowed_sizes: record.allowed_sizes.iter().map(|s| size_to_proto(*s) as i32).collect(),
        created_at: timestamp(record.created_at_ms),
        deleting: record.deleting,
    }
}

pub fn placement(record: &PlacementRecord) -> pb::Placement {
    pb::Placement {
        group: record.group.clone(),
        zone: record.zone.clone(),
        namespace: record.namespace.clone(),
        service_account: record.service_account.clone(),
        route: record.route.clone(),
        ip_rules: record.ip_rules.clone(),
        worker_count: record.worker_count,
        max_workers: record.max_workers(),
        size: size_to_proto(record.size) as i32,
        disabled_packages: record.disabled_packages.clone(),
        status: placement_status(record.status) as i32,
        status_message: record.status_message.clone(),
        config_commit: record.config_commit.clone(),
        policy_version: record.policy_version,
        created_at: timestamp(record.created_at_ms),
        updated_at: timestamp(record.updated_at_ms),
        key_count: record.key_hashes.len() as u32,
        cloud_resources: record.cloud_resources.clone(),
    }
}

pub fn worker(group: &str, zone: &str, view: &WorkerView) -> pb::Worker {
    pb::Worker {
        id: view.id.clone(),
        group: group.to_owned(),
        zone: zone.to_owned(),
        track: track_to_proto(view.track) as i32,
        state: worker_state(view.state) as i32,
        reason: view.reason.clone(),
        mcp_address: view.mcp_address.clone(),
        admin_address: view.grpc_address.clone(),
        loaded_commit: view.loaded_commit.clone(),
        restarts: view.restarts,
        started_at: timestamp(view.started_at_ms),
    }
}

pub fn not_ready(worker: &NotReadyWorker) -> pb::NotReady {
    pb::NotReady {
        worker_id: worker.id.clone(),
        reason: worker.reason.clone(),
        exit_code: worker.exit_code,
        last_log_lines: worker.last_log_lines.clone(),
    }
}

/// A snapshot as the node reads it, checked: a commit, a location, a digest (and the same of
/// its environment when it has one).
pub fn snapshot_ref(
    snapshot: Option<common::Snapshot>,
    field: &'static str,
) -> Result<SnapshotRef> {
    let snapshot = snapshot.ok_or_else(|| Error::invalid(field, "is required"))?;
    if snapshot.commit.is_empty() || snapshot.location.is_empty() {
        return Err(Error::invalid(field, "needs a commit and a location"));
    }
    let digest = |value: &str, field: String| {
        let digest = value.strip_prefix("sha256:").unwrap_or(value).to_ascii_lowercase();
        match digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()) {
            true => Ok(digest),
            false => Err(Error::invalid(field, "must be `sha256:<64 hex characters>`")),
        }
    };
    let environment = match snapshot.environment {
        Some(env) if env.location.is_empty() => {
            return Err(Error::invalid(field, "names an environment without a location"));
        }
        Some(env) => Some(ramen_node_contract::EnvironmentRef {
            digest: digest(&env.digest, format!("{field}.environment.digest"))?,
            key: env.key,
            location: env.location,
        }),
        None => None,
    };
    Ok(SnapshotRef {
        digest: digest(&snapshot.digest, format!("{field}.digest"))?,
        commit: snapshot.commit,
        key: snapshot.location,
        environment,
    })
}

/// The node config a deploy writes, checked: a snapshot to load, env-style secret names.
pub fn template(config: pb::NodeConfig) -> Result<ConfigTemplate> {
    let snapshot = snapshot_ref(config.snapshot, "config.snapshot")?;
    let mut secrets = std::collections::BTreeMap::new();
    for secret in config.secrets {
        validate::secret_name(&secret.name)?;
        secrets.insert(secret.name, secret.value);
    }
    let connect_ports =
        ramen_node_contract::egress::connect_ports(&config.egress_allow).map_err(|e| {
            Error::invalid("config.egress_allow", format!("{e}: fix the group's restrictions"))
        })?;
    Ok(ConfigTemplate {
        environment: config.environment,
        snapshot: Some(snapshot),
        secrets,
        verbose: config.verbose,
        connect_ports: Some(connect_ports),
    })
}

#[cfg(test)]
#[path = "conversions_tests.rs"]
mod tests;
