//! `WatchJob`: the job as it is, then every change, ending after a terminal state. Changes are
//! found by diffing the stored record every poll interval: the store is the one source of
//! truth every replica shares, so any replica serves any job and a watcher never misses a
//! change the way a dropped event could make it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use ramen_proto::deployer::v1 as pb;
use ramen_proto::deployer::v1::watch_job_response::Update;

use super::model::{JobRecord, StepRecord};
use crate::Jobs;
use crate::conversions;

pub type WatchStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchJobResponse, tonic::Status>> + Send>>;

const POLL: Duration = Duration::from_millis(250);

struct Watch {
    deployer: Arc<Jobs>,
    last: JobRecord,
    pending: VecDeque<Update>,
    done: bool,
}

pub(crate) fn watch(deployer: Arc<Jobs>, job: JobRecord) -> WatchStream {
    let mut pending = VecDeque::from([Update::Snapshot(conversions::job(&job, true))]);
    let done = job.state.is_terminal();
    if done {
        pending.push_back(state_update(&job));
    }
    let watch = Watch { deployer, last: job, pending, done };
    Box::pin(futures::stream::unfold(watch, |mut w| async move {
        loop {
            if let Some(update) = w.pending.pop_front() {
                return Some((Ok(pb::WatchJobResponse { update: Some(update) }), w));
            }
            if w.done {
                return None;
            }
            tokio::time::sleep(POLL).await;
            match w.deployer.core.db.jobs.get(&w.last.id).await {
                Ok(Some(current)) => {
                    diff(&w.last, &current.value, &mut w.pending);
                    w.done = current.value.state.is_terminal();
                    w.last = current.value;
                }
                Ok(None) => return None,
                Err(err) => return Some((Err(tonic::Status::unavailable(err.to_string())), w)),
            }
        }
    }))
}

fn state_update(job: &JobRecord) -> Update {
    Update::State(pb::JobStateUpdate {
        state: conversions::job_state(job.state) as i32,
        commit: job.commit.clone(),
        error: job.error.clone(),
    })
}

fn diff(old: &JobRecord, new: &JobRecord, out: &mut VecDeque<Update>) {
    for zone in &new.zones {
        let before = old.zone(&zone.zone);
        for step in &zone.steps {
            let prior = before.and_then(|z| z.step(step.step));
            let seen = prior.map_or(0, |p| p.log.len().min(step.log.len()));
            for line in &step.log[seen..] {
                out.push_back(Update::Log(pb::LogAppended {
                    zone: zone.zone.clone(),
                    step: conversions::step(step.step) as i32,
                    line: Some(conversions::log_line(line)),
                }));
            }
            if prior.is_none_or(|p| changed(p, step)) {
                out.push_back(Update::Step(pb::StepUpdate {
                    zone: zone.zone.clone(),
                    step: conversions::step(step.step) as i32,
                    run: Some(conversions::step_run(step, false)),
                }));
            }
        }
    }
    if old.state != new.state
        || old.commit != new.commit
        || (new.state.is_terminal() && old.error != new.error)
    {
        out.push_back(state_update(new));
    }
}

fn changed(a: &StepRecord, b: &StepRecord) -> bool {
    a.status != b.status
        || a.started_at_ms != b.started_at_ms
        || a.ended_at_ms != b.ended_at_ms
        || a.outcome != b.outcome
        || a.error != b.error
}
