//! The two tracks of a placement: restart in place, scale, roll, list workers.

use std::time::Duration;

use super::ZoneManager;
use crate::error::{Error, Result};
use crate::model::{PlacementPhase, PlacementRecord, TrackKind, placement_id};
use crate::provider::{NotReadyWorker, RolloutPlan, TemplateChoice, WorkerView};

/// A track after a restart or scale. Not ready in time is an answer, naming the stuck workers.
#[derive(Clone, Debug)]
pub struct RolloutOutcome {
    pub ready: bool,
    pub workers: Vec<WorkerView>,
    pub not_ready: Vec<NotReadyWorker>,
}

impl ZoneManager {
    /// Restarts the track in place on the last config written, one worker at a time, and waits.
    /// A track at zero (a canary scaled down after a failed deploy) starts its default count.
    pub async fn restart_track(
        &self,
        group: &str,
        zone: &str,
        track: TrackKind,
        timeout: Option<Duration>,
    ) -> Result<RolloutOutcome> {
        let lock = self.lock(&placement_id(group, zone));
        let _guard = lock.lock().await;
        let record = self.live_placement(group, zone).await?;
        if record.config_commit.is_empty() {
            return Err(Error::FailedPrecondition(format!(
                "nothing to restart in {}: no config has been written yet (WriteConfig comes first)",
                record.label()
            )));
        }
        let replicas = match record.track(track).replicas {
            0 => record.default_replicas(track),
            n => n,
        };
        let record = self.set_replicas(&record, track, replicas).await?;
        let timeout = timeout.unwrap_or(self.settings.restart_timeout);
        let plan = RolloutPlan {
            track,
            replicas,
            template: TemplateChoice::Adopt,
            restart_existing: true,
            timeout,
        };
        self.run_rollout(&record, plan).await
    }

    /// Sets the track's replica count (0 included) and waits for the new workers.
    pub async fn scale_track(
        &self,
        group: &str,
        zone: &str,
        track: TrackKind,
        replicas: u32,
        timeout: Option<Duration>,
    ) -> Result<RolloutOutcome> {
        let lock = self.lock(&placement_id(group, zone));
        let _guard = lock.lock().await;
        let record = self.live_placement(group, zone).await?;
        let most = record.max_workers().max(1);
        if replicas > most {
            return Err(Error::invalid(
                "replicas",
                format!(
                    "{replicas} is above this placement's maximum of {most} (twice its worker count {}); raise the worker count first",
                    record.worker_count
                ),
            ));
        }
        let record = self.set_replicas(&record, track, replicas).await?;
        let timeout = timeout.unwrap_or(self.settings.restart_timeout);
        let plan = RolloutPlan {
            track,
            replicas,
            template: TemplateChoice::Keep,
            restart_existing: false,
            timeout,
        };
        self.run_rollout(&record, plan).await
    }

    pub async fn list_workers(
        &self,
        group: &str,
        zone: &str,
        track: Option<TrackKind>,
    ) -> Result<Vec<WorkerView>> {
        let record = self.placement(group, zone).await?;
        let workers = self.provider_for(&record)?.workers(&record).await?;
        Ok(workers.into_iter().filter(|w| track.is_none_or(|t| w.track == t)).collect())
    }

    /// Restarts (or rescales) a track on the config it runs: IP rules, size, worker count.
    pub(crate) async fn roll(
        &self,
        record: &PlacementRecord,
        track: TrackKind,
        replicas: u32,
        restart: bool,
    ) -> Result<RolloutOutcome> {
        let timeout = self.settings.restart_timeout;
        let plan = RolloutPlan {
            track,
            replicas,
            template: TemplateChoice::Keep,
            restart_existing: restart,
            timeout,
        };
        self.run_rollout(record, plan).await
    }

    /// Rolls every track that has run, canary first; false when nothing runs yet.
    pub(crate) async fn roll_running(&self, record: &PlacementRecord) -> Result<bool> {
        let mut rolled = false;
        for track in TrackKind::BOTH {
            let state = record.track(track);
            if state.replicas > 0 && !state.commit.is_empty() {
                self.roll(record, track, state.replicas, true).await?;
                rolled = true;
            }
        }
        Ok(rolled)
    }

    async fn set_replicas(
        &self,
        record: &PlacementRecord,
        track: TrackKind,
        replicas: u32,
    ) -> Result<PlacementRecord> {
        if record.track(track).replicas == replicas {
            return Ok(record.clone());
        }
        self.update_placement(&record.group, &record.zone, |p| {
            p.track_mut(track).replicas = replicas;
            Ok(())
        })
        .await
    }

    async fn run_rollout(
        &self,
        record: &PlacementRecord,
        plan: RolloutPlan,
    ) -> Result<RolloutOutcome> {
        let track = plan.track;
        let report = self.provider_for(record)?.rollout(record, plan).await?;
        if report.ready {
            let commit = report.commit.clone();
            self.update_placement(&record.group, &record.zone, |p| {
                p.track_mut(track).commit = commit.clone();
                Ok(())
            })
            .await?;
        }
        let (status, message) = match report.not_ready.first() {
            None => (PlacementPhase::Ready, String::new()),
            Some(stuck) => {
                (PlacementPhase::Degraded, format!("{} not ready: {}", stuck.id, stuck.reason))
            }
        };
        self.set_status(&record.group, &record.zone, status, message).await?;
        Ok(RolloutOutcome {
            ready: report.ready,
            workers: report.workers,
            not_ready: report.not_ready,
        })
    }

    /// Builds (or finds) the snapshot's Python environment where the placement's workers run.
    /// The placement's lock is not held: an install takes long, and building twice is only
    /// wasted work (the second finds the first's result or writes the same content).
    pub async fn build_environment(
        &self,
        group: &str,
        zone: &str,
        snapshot: &ramen_node_contract::SnapshotRef,
        timeout: Option<Duration>,
    ) -> Result<ramen_node_contract::environment::BuildOutcome> {
        let record = self.live_placement(group, zone).await?;
        let provider = self.provider_for(&record)?;
        let timeout = timeout.unwrap_or(self.settings.restart_timeout * 5);
        Ok(provider.build_environment(&record, snapshot, timeout).await?)
    }
}
