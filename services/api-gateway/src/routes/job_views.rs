//! JSON shape of a deploy job: per zone, per step, with outcome, errors, stuck workers and log
//! lines; and how a `WatchJob` update changes the job the SSE route keeps.

use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::watch_job_response::Update;
use serde::Serialize;
use utoipa::ToSchema;

use super::deploy_views::job_state;
use super::views::time;
use super::zone_views::word;

#[derive(Debug, Serialize, ToSchema)]
pub struct LogLineView {
    pub at: Option<String>,
    pub text: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StuckWorkerView {
    pub worker: String,
    /// e.g. `exit code 1: ModuleNotFoundError...`, `Unschedulable: ...`.
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StepRunView {
    /// `sync`, `write_config`, `canary`, `reload_smoke`, `review`, `stable`, `canary_rollback`.
    pub step: String,
    /// `pending`, `running`, `succeeded`, `failed`, `skipped`, `cancelled`.
    pub status: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// Short summary once ended.
    pub outcome: String,
    pub error: String,
    pub stuck: Vec<StuckWorkerView>,
    /// Empty in job lists (ask for the job).
    pub log: Vec<LogLineView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ZoneRunView {
    pub zone: String,
    pub status: String,
    pub steps: Vec<StepRunView>,
    /// How the canary's surface differs from stable's here (empty: it does not, or not
    /// compared yet).
    pub surface_changes: Vec<SurfaceChangeView>,
    /// Items (tools, resources, templates, prompts) the canary lists, once compared.
    pub surface_items: u32,
}

/// One item that differs between stable and the canary.
#[derive(Debug, Serialize, ToSchema)]
pub struct SurfaceChangeView {
    /// `tool`, `resource`, `resource template`, `prompt`.
    pub kind: String,
    /// How clients address it: a tool's or prompt's name, a resource's uri, a template.
    pub name: String,
    /// `added`, `removed`, `changed`.
    pub change: String,
    /// Added or removed: the whole item as listed.
    pub item: Option<serde_json::Value>,
    /// Changed: each differing field.
    pub fields: Vec<FieldChangeView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FieldChangeView {
    /// JSON Pointer inside the item: `description`, `inputSchema/properties/city/type`.
    pub path: String,
    /// Absent on that side when missing.
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

/// The review of a job's surface change.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewView {
    /// `pending`, `approved`, `rejected`, `expired` (a rejection nobody made in time).
    pub decision: String,
    pub requested_at: Option<String>,
    pub expires_at: Option<String>,
    /// Who decided; empty while pending (`deployer` for an expiry).
    pub decided_by: String,
    pub decided_at: Option<String>,
    pub reason: String,
}

fn json(text: &str) -> Option<serde_json::Value> {
    if text.is_empty() { None } else { serde_json::from_str(text).ok() }
}

impl From<pb::SurfaceChange> for SurfaceChangeView {
    fn from(c: pb::SurfaceChange) -> Self {
        Self {
            item: json(&c.item_json),
            fields: c
                .fields
                .into_iter()
                .map(|f| FieldChangeView {
                    before: json(&f.before_json),
                    after: json(&f.after_json),
                    path: f.path,
                })
                .collect(),
            kind: c.kind,
            name: c.name,
            change: c.change,
        }
    }
}

impl From<pb::SurfaceReview> for ReviewView {
    fn from(r: pb::SurfaceReview) -> Self {
        Self {
            decision: word(r.decision().as_str_name(), "REVIEW_DECISION_"),
            requested_at: time(r.requested_at.as_ref()),
            expires_at: time(r.expires_at.as_ref()),
            decided_at: time(r.decided_at.as_ref()),
            decided_by: r.decided_by,
            reason: r.reason,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    pub group: String,
    pub environment: String,
    /// As requested.
    pub git_ref: String,
    /// Resolved commit; empty until resolved.
    pub commit: String,
    /// `queued`, `running`, `review` (waiting for a surface review), `succeeded`, `failed`,
    /// `failed_resumable`, `cancelled`, `dead_lettered`.
    pub state: String,
    pub requested_by: String,
    pub created_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Delivery count of the current attempt (1 = first).
    pub attempt: u32,
    pub error: String,
    pub cancel_requested: bool,
    pub zones: Vec<ZoneRunView>,
    /// Set once a surface change asked for review.
    pub review: Option<ReviewView>,
}

fn step_status(status: ramen_proto::common::v1::StepStatus) -> String {
    word(status.as_str_name(), "STEP_STATUS_")
}

impl From<pb::StepRun> for StepRunView {
    fn from(s: pb::StepRun) -> Self {
        Self {
            step: word(s.step().as_str_name(), "DEPLOY_STEP_"),
            status: step_status(s.status()),
            started_at: time(s.started_at.as_ref()),
            ended_at: time(s.ended_at.as_ref()),
            outcome: s.outcome,
            error: s.error,
            stuck: s
                .stuck
                .into_iter()
                .map(|w| StuckWorkerView { worker: w.worker, reason: w.reason })
                .collect(),
            log: s
                .log
                .into_iter()
                .map(|l| LogLineView { at: time(l.at.as_ref()), text: l.text })
                .collect(),
        }
    }
}

impl From<pb::DeployJob> for JobView {
    fn from(j: pb::DeployJob) -> Self {
        let state = job_state(j.state());
        let zones = j
            .zones
            .into_iter()
            .map(|z| ZoneRunView {
                status: step_status(z.status()),
                zone: z.zone,
                steps: z.steps.into_iter().map(StepRunView::from).collect(),
                surface_changes: z
                    .surface_changes
                    .into_iter()
                    .map(SurfaceChangeView::from)
                    .collect(),
                surface_items: z.surface_items,
            })
            .collect();
        Self {
            state,
            created_at: time(j.created_at.as_ref()),
            started_at: time(j.started_at.as_ref()),
            finished_at: time(j.finished_at.as_ref()),
            id: j.id,
            group: j.group,
            environment: j.environment,
            git_ref: j.git_ref,
            commit: j.commit,
            requested_by: j.requested_by,
            attempt: j.attempt,
            error: j.error,
            cancel_requested: j.cancel_requested,
            zones,
            review: j.review.map(ReviewView::from),
        }
    }
}

/// Where a step stands in the pipeline: REVIEW's number came after the rollback's.
fn order(step: i32) -> i32 {
    if step == ramen_proto::common::v1::DeployStep::Review as i32 { 45 } else { step * 10 }
}

/// The step `step` of `zone` in `job`, added in pipeline order when the job did not list it.
fn step_mut<'j>(job: &'j mut pb::DeployJob, zone: &str, step: i32) -> &'j mut pb::StepRun {
    let at = match job.zones.iter().position(|z| z.zone == zone) {
        Some(at) => at,
        None => {
            job.zones.push(pb::ZoneRun { zone: zone.to_owned(), ..Default::default() });
            job.zones.len() - 1
        }
    };
    let steps = &mut job.zones[at].steps;
    let index = match steps.iter().position(|s| s.step == step) {
        Some(index) => index,
        None => {
            let index =
                steps.iter().position(|s| order(s.step) > order(step)).unwrap_or(steps.len());
            steps.insert(index, pb::StepRun { step, ..Default::default() });
            index
        }
    };
    &mut steps[index]
}

/// Applies one `WatchJob` message to the job the stream has shown so far.
pub fn apply(job: &mut pb::DeployJob, update: Update) {
    match update {
        Update::Snapshot(snapshot) => *job = snapshot,
        Update::Step(change) => {
            let run = change.run.unwrap_or_default();
            let step = step_mut(job, &change.zone, change.step);
            let log = std::mem::take(&mut step.log);
            *step = pb::StepRun { log, ..run };
            step.step = change.step;
        }
        Update::Log(line) => {
            if let Some(text) = line.line {
                step_mut(job, &line.zone, line.step).log.push(text);
            }
        }
        Update::State(state) => {
            job.state = state.state;
            if !state.commit.is_empty() {
                job.commit = state.commit;
            }
            job.error = state.error;
        }
    }
}
