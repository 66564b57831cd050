//! Domain ⇄ proto for `RebalancerService`.

use std::time::Duration;

use prost_types::Timestamp;
use ramen_proto::common::v1::{LoadState as PbLoadState, Track};
use ramen_proto::rebalancer::v1 as pb;

use crate::actions::{ActionRecord, ActionState};
use crate::cells::{CellView, NodeView};
use crate::events::provider_to_proto;
use crate::model::LoadState;
use crate::scheduler::Status;

pub fn timestamp(ms: i64) -> Timestamp {
    Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

fn optional_timestamp(ms: i64) -> Option<Timestamp> {
    (ms > 0).then(|| timestamp(ms))
}

pub fn load_state(state: LoadState) -> PbLoadState {
    match state {
        LoadState::Low => PbLoadState::Low,
        LoadState::Even => PbLoadState::Even,
        LoadState::High => PbLoadState::High,
        LoadState::Down => PbLoadState::Down,
    }
}

fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

pub fn node(node: &NodeView) -> pb::NodeLoad {
    let track = if node.slot.stable { Track::Worker } else { Track::WorkerCanary };
    pb::NodeLoad {
        node_id: node.node_id.clone(),
        track: track as i32,
        in_flight: node.slot.in_flight,
        cap: node.slot.cap,
        ready: node.slot.ready && !node.slot.draining && node.live,
        reported_at: optional_timestamp(node.slot.measured_ms),
    }
}

pub fn cell(cell: &CellView, nodes: &[NodeView]) -> pb::LoadCell {
    pb::LoadCell {
        group: cell.group.clone(),
        zone: cell.zone.clone(),
        state: load_state(cell.state) as i32,
        live_nodes: cell.live_nodes,
        in_flight: saturate(cell.in_flight),
        cap: saturate(cell.cap),
        utilization: cell.utilization,
        last_report_at: optional_timestamp(cell.last_report_ms),
        nodes: nodes.iter().map(node).collect(),
        min_workers: cell.min_workers,
        max_workers: cell.max_workers,
        desired_workers: cell.desired_workers,
    }
}

pub fn action_state(state: ActionState) -> pb::RebalanceState {
    match state {
        ActionState::Pending => pb::RebalanceState::Pending,
        ActionState::Applied => pb::RebalanceState::Applied,
        ActionState::Failed => pb::RebalanceState::Failed,
        ActionState::Expired => pb::RebalanceState::Expired,
    }
}

pub fn weights(record: &ActionRecord) -> Vec<pb::TargetWeight> {
    record
        .targets
        .iter()
        .map(|t| pb::TargetWeight { target: t.target.clone(), weight_permille: t.weight })
        .collect()
}

pub fn action(id: &str, record: &ActionRecord) -> pb::RebalanceAction {
    pb::RebalanceAction {
        id: id.to_owned(),
        group: record.group.clone(),
        zone: record.zone.clone(),
        provider: provider_to_proto(record.provider) as i32,
        state: action_state(record.state) as i32,
        applied: record.state == ActionState::Applied,
        note: record.note.clone(),
        weights: weights(record),
        actor: record.actor.clone(),
        attempts: record.attempts,
        created_at: Some(timestamp(record.created_ms)),
        updated_at: Some(timestamp(record.updated_ms)),
        deadline: Some(timestamp(record.deadline_ms)),
    }
}

pub fn response(id: &str, record: &ActionRecord) -> pb::RebalanceResponse {
    pb::RebalanceResponse {
        applied: record.state == ActionState::Applied,
        note: record.note.clone(),
        action_id: id.to_owned(),
        weights: weights(record),
    }
}

pub fn scheduler(status: &Status) -> pb::SchedulerStatus {
    pb::SchedulerStatus {
        enabled: status.enabled,
        interval: Duration::try_into(status.interval).ok(),
        leader: status.leader.clone(),
        is_leader: status.is_leader,
        lease_expires_at: status.lease_expires_ms.map(timestamp),
        last_run_at: status.last_run.as_ref().map(|r| timestamp(r.at_ms)),
        next_run_at: status.next_run_ms.map(timestamp),
        last_run_actions: status.last_run.as_ref().map(|r| r.actions).unwrap_or_default(),
    }
}

pub fn scheduler_settings(record: &crate::scheduler::SettingsRecord) -> pb::SchedulerSettings {
    pb::SchedulerSettings {
        enabled: record.enabled,
        interval_seconds: record.interval_seconds,
        updated_at: (record.updated_at_ms > 0).then(|| timestamp(record.updated_at_ms)),
        updated_by: record.updated_by.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_split_milliseconds() {
        assert_eq!(timestamp(1_500), Timestamp { seconds: 1, nanos: 500_000_000 });
        assert_eq!(optional_timestamp(0), None);
    }
}
