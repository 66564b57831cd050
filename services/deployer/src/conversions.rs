//! Domain records ⇄ `ramen.deployer.v1` messages, and the paging helper of the list calls.

use ramen_proto::common::v1 as common;
use ramen_proto::deployer::v1 as pb;

use crate::error::{Error, Result};
use crate::jobs::model::{
    JobRecord, JobState, LogLine, ReviewDecision, ReviewRecord, Step, StepRecord,
    SurfaceChangeRecord, ZoneRun,
};
use crate::model::{
    Deletion, EnvironmentRecord, GroupPhase, GroupRecord, Restrictions, SagaPhase, Status,
    SurfaceChanges,
};

pub fn ts(ms: i64) -> Option<prost_types::Timestamp> {
    (ms > 0).then(|| prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    })
}

pub fn group(g: &GroupRecord) -> pb::Group {
    pb::Group {
        name: g.name.clone(),
        repo_url: g.repo_url.clone(),
        default_ref: g.default_ref.clone(),
        bucket_prefix: g.bucket_prefix(),
        worker_image: g.worker_image.clone(),
        restrictions: Some(restrictions(&g.restrictions)),
        github_app_installation_id: g.github_app_installation_id,
        status: match g.status {
            GroupPhase::Active => pb::GroupStatus::Active,
            GroupPhase::Deleting => pb::GroupStatus::Deleting,
        } as i32,
        created_at: ts(g.created_at_ms),
        updated_at: ts(g.updated_at_ms),
    }
}

pub fn restrictions(r: &Restrictions) -> pb::GroupRestrictions {
    pb::GroupRestrictions {
        max_workers_per_zone: r.max_workers_per_zone,
        allowed_zones: r.allowed_zones.clone(),
        egress_allow: r.egress_allow.clone(),
        max_in_flight_per_node: r.max_in_flight_per_node,
    }
}

pub fn restrictions_in(r: Option<pb::GroupRestrictions>) -> Result<Restrictions> {
    let r = r.unwrap_or_default();
    for entry in &r.egress_allow {
        ramen_node_contract::egress::check(entry)
            .map_err(|e| Error::invalid("restrictions.egress_allow", e.to_string()))?;
    }
    Ok(Restrictions {
        max_workers_per_zone: r.max_workers_per_zone,
        allowed_zones: crate::validate::zones(&r.allowed_zones)?,
        egress_allow: r.egress_allow,
        max_in_flight_per_node: r.max_in_flight_per_node,
    })
}

pub fn deletion(group: &str, d: &Deletion) -> pb::GroupDeletion {
    pb::GroupDeletion {
        group: group.to_owned(),
        state: match d.state {
            SagaPhase::Running => pb::SagaState::Running,
            SagaPhase::Done => pb::SagaState::Done,
            SagaPhase::Retrying => pb::SagaState::Retrying,
        } as i32,
        steps: d
            .steps
            .iter()
            .map(|s| pb::SagaStep {
                name: s.name.clone(),
                status: status(s.status) as i32,
                detail: s.detail.clone(),
                updated_at: ts(s.updated_at_ms),
            })
            .collect(),
        started_at: ts(d.started_at_ms),
        finished_at: ts(d.finished_at_ms),
        error: d.error.clone(),
    }
}

pub fn environment(
    e: &EnvironmentRecord,
    defaults: &crate::mcp_auth::McpAuthDefaults,
) -> pb::Environment {
    let (auth, auth_inherited) = defaults.resolve(e.auth.as_ref(), &e.group, &e.name);
    pb::Environment {
        auth: Some(auth),
        auth_inherited,
        group: e.group.clone(),
        name: e.name.clone(),
        git_ref: e.git_ref.clone(),
        zones: e.zones.clone(),
        verbose: e.verbose,
        blocked: e.blocked.clone(),
        last_deploy: e.last_deploy.as_ref().map(|d| pb::DeployResult {
            job_id: d.job_id.clone(),
            outcome: job_state(d.outcome) as i32,
            git_ref: d.git_ref.clone(),
            commit: d.commit.clone(),
            finished_at: ts(d.finished_at_ms),
            error: d.error.clone(),
        }),
        created_at: ts(e.created_at_ms),
        updated_at: ts(e.updated_at_ms),
        deleting: e.deleting,
        surface_changes: match e.surface_changes {
            SurfaceChanges::Allow => pb::SurfaceChanges::Allow,
            SurfaceChanges::Review => pb::SurfaceChanges::Review,
        } as i32,
        record_arguments: e.record_arguments,
    }
}

/// A request's surface setting; `None` when unspecified. An unknown number is refused by name.
pub fn surface_changes_in(value: i32) -> Result<Option<SurfaceChanges>> {
    match pb::SurfaceChanges::try_from(value) {
        Ok(pb::SurfaceChanges::Unspecified) => Ok(None),
        Ok(pb::SurfaceChanges::Allow) => Ok(Some(SurfaceChanges::Allow)),
        Ok(pb::SurfaceChanges::Review) => Ok(Some(SurfaceChanges::Review)),
        Err(_) => {
            Err(Error::invalid("surface_changes", format!("{value} is not `allow` or `review`")))
        }
    }
}

pub fn status(s: Status) -> common::StepStatus {
    match s {
        Status::Pending => common::StepStatus::Pending,
        Status::Running => common::StepStatus::Running,
        Status::Succeeded => common::StepStatus::Succeeded,
        Status::Failed => common::StepStatus::Failed,
        Status::Skipped => common::StepStatus::Skipped,
        Status::Cancelled => common::StepStatus::Cancelled,
    }
}

pub fn job_state(s: JobState) -> common::JobState {
    match s {
        JobState::Queued => common::JobState::Queued,
        JobState::Running => common::JobState::Running,
        JobState::Succeeded => common::JobState::Succeeded,
        JobState::Failed => common::JobState::Failed,
        JobState::FailedResumable => common::JobState::FailedResumable,
        JobState::Cancelled => common::JobState::Cancelled,
        JobState::DeadLettered => common::JobState::DeadLettered,
        JobState::Review => common::JobState::Review,
    }
}

pub fn job_state_in(s: common::JobState) -> Option<JobState> {
    Some(match s {
        common::JobState::Unspecified => return None,
        common::JobState::Queued => JobState::Queued,
        common::JobState::Running => JobState::Running,
        common::JobState::Succeeded => JobState::Succeeded,
        common::JobState::Failed => JobState::Failed,
        common::JobState::FailedResumable => JobState::FailedResumable,
        common::JobState::Cancelled => JobState::Cancelled,
        common::JobState::DeadLettered => JobState::DeadLettered,
        common::JobState::Review => JobState::Review,
    })
}

pub fn step(s: Step) -> common::DeployStep {
    match s {
        Step::Sync => common::DeployStep::Sync,
        Step::WriteConfig => common::DeployStep::WriteConfig,
        Step::Canary => common::DeployStep::Canary,
        Step::ReloadSmoke => common::DeployStep::ReloadSmoke,
        Step::Review => common::DeployStep::Review,
        Step::Stable => common::DeployStep::Stable,
        Step::CanaryRollback => common::DeployStep::CanaryRollback,
    }
}

pub fn log_line(l: &LogLine) -> pb::LogLine {
    pb::LogLine { at: ts(l.at_ms), text: l.text.clone() }
}

pub fn step_run(s: &StepRecord, with_log: bool) -> pb::StepRun {
    pb::StepRun {
        step: step(s.step) as i32,
        status: status(s.status) as i32,
        started_at: ts(s.started_at_ms),
        ended_at: ts(s.ended_at_ms),
        outcome: s.outcome.clone(),
        log: if with_log { s.log.iter().map(log_line).collect() } else { Vec::new() },
        error: s.error.clone(),
        stuck: s
            .stuck
            .iter()
            .map(|w| pb::StuckWorker { worker: w.worker.clone(), reason: w.reason.clone() })
            .collect(),
    }
}

fn zone_run(z: &ZoneRun, with_log: bool) -> pb::ZoneRun {
    pb::ZoneRun {
        zone: z.zone.clone(),
        status: status(z.status) as i32,
        steps: z.steps.iter().map(|s| step_run(s, with_log)).collect(),
        surface_changes: z.surface_changes.iter().map(surface_change).collect(),
        surface_items: z.surface_items,
    }
}

fn surface_change(c: &SurfaceChangeRecord) -> pb::SurfaceChange {
    pb::SurfaceChange {
        kind: c.kind.clone(),
        name: c.name.clone(),
        change: c.change.clone(),
        item_json: c.item_json.clone(),
        fields: c
            .fields
            .iter()
            .map(|f| pb::SurfaceFieldChange {
                path: f.path.clone(),
                before_json: f.before_json.clone(),
                after_json: f.after_json.clone(),
            })
            .collect(),
    }
}

fn review(r: &ReviewRecord) -> pb::SurfaceReview {
    pb::SurfaceReview {
        decision: match r.decision {
            ReviewDecision::Pending => pb::ReviewDecision::Pending,
            ReviewDecision::Approved => pb::ReviewDecision::Approved,
            ReviewDecision::Rejected => pb::ReviewDecision::Rejected,
            ReviewDecision::Expired => pb::ReviewDecision::Expired,
        } as i32,
        requested_at: ts(r.requested_at_ms),
        expires_at: ts(r.expires_at_ms),
        decided_by: r.decided_by.clone(),
        decided_at: ts(r.decided_at_ms),
        reason: r.reason.clone(),
    }
}

pub fn job(j: &JobRecord, with_log: bool) -> pb::DeployJob {
    pb::DeployJob {
        id: j.id.clone(),
        group: j.group.clone(),
        environment: j.environment.clone(),
        git_ref: j.git_ref.clone(),
        commit: j.commit.clone(),
        state: job_state(j.state) as i32,
        requested_by: j.requested_by.clone(),
        created_at: ts(j.created_at_ms),
        started_at: ts(j.started_at_ms),
        finished_at: ts(j.finished_at_ms),
        attempt: j.attempt,
        error: j.error.clone(),
        cancel_requested: j.cancel_requested,
        zones: j.zones.iter().map(|z| zone_run(z, with_log)).collect(),
        review: j.review.as_ref().map(review),
    }
}

/// The one page type of every service (`ramen_service::paging`).
pub use ramen_service::paging::Page;

/// The request's page, or an error naming the token.
pub fn page(request: Option<&common::PageRequest>) -> Result<Page> {
    Page::of(request).map_err(|bad| Error::invalid("page_token", format!("is {bad}")))
}
