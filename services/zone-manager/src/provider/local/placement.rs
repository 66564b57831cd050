//! One local placement in memory: its record, its track configs on disk and its workers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use ramen_lifecycle::TaskCenter;

use super::layout::Layout;
use super::settings::LocalSettings;
use super::worker::{WorkerCtx, WorkerHandle};
use crate::model::{PlacementRecord, TrackKind};
use crate::provider::{ConfigTemplate, ProviderError, WorkerEvents, WorkerView};

pub(crate) struct LocalPlacement {
    pub group: String,
    pub zone: String,
    pub layout: Layout,
    pub settings: Arc<LocalSettings>,
    /// Held for the whole of a rollout, so track operations on one placement do not interleave.
    pub ops: tokio::sync::Mutex<()>,
    record: RwLock<Arc<PlacementRecord>>,
    workers: Mutex<BTreeMap<String, Arc<WorkerHandle>>>,
    tasks: TaskCenter,
    events: WorkerEvents,
}

impl LocalPlacement {
    pub fn new(
        record: PlacementRecord,
        layout: Layout,
        settings: Arc<LocalSettings>,
        tasks: TaskCenter,
        events: WorkerEvents,
    ) -> Self {
        Self {
            group: record.group.clone(),
            zone: record.zone.clone(),
            layout,
            settings,
            ops: tokio::sync::Mutex::new(()),
            record: RwLock::new(Arc::new(record)),
            workers: Mutex::default(),
            tasks,
            events,
        }
    }

    /// The latest record seen: policy, size and IP rules for workers that start from now on.
    pub fn record(&self) -> Arc<PlacementRecord> {
        self.record.read().clone()
    }

    /// Keeps the newest record: a call that read the placement earlier must not bring back an
    /// older policy for the workers that start after it.
    pub fn set_record(&self, record: PlacementRecord) {
        let mut current = self.record.write();
        if record.revision >= current.revision {
            *current = Arc::new(record);
        }
    }

    pub fn written(&self) -> Result<Option<ConfigTemplate>, ProviderError> {
        self.layout.read_template(&self.layout.written())
    }

    pub fn track_template(
        &self,
        track: TrackKind,
    ) -> Result<Option<ConfigTemplate>, ProviderError> {
        self.layout.read_template(&self.layout.track(track))
    }

    pub fn save_track_template(
        &self,
        track: TrackKind,
        template: &ConfigTemplate,
    ) -> Result<(), ProviderError> {
        self.layout.write_template(&self.layout.track(track), template)
    }

    /// The track's workers, in id order (`worker-0`, `worker-1`, ...).
    pub fn track_workers(&self, track: TrackKind) -> Vec<Arc<WorkerHandle>> {
        let mut workers: Vec<_> =
            self.workers.lock().values().filter(|w| w.track == track).cloned().collect();
        workers.sort_by_key(|w| w.index);
        workers
    }

    pub fn all_workers(&self) -> Vec<Arc<WorkerHandle>> {
        self.workers.lock().values().cloned().collect()
    }

    /// Starts a new worker on the track (the lowest free index) running `template`.
    pub fn add_worker(
        self: &Arc<Self>,
        track: TrackKind,
        template: Arc<ConfigTemplate>,
    ) -> Arc<WorkerHandle> {
        let mut workers = self.workers.lock();
        let index = (0..).find(|i| !workers.contains_key(&worker_id(track, *i))).unwrap_or(0);
        let id = worker_id(track, index);
        let ctx = WorkerCtx {
            placement: self.clone(),
            id: id.clone(),
            track,
            dir: self.layout.worker(&id),
            events: self.events.clone(),
        };
        let handle = Arc::new(WorkerHandle::start(ctx, index, template, &self.tasks));
        workers.insert(id, handle.clone());
        handle
    }

    /// Drains and stops the worker, then forgets it.
    pub async fn remove_worker(&self, handle: &WorkerHandle) {
        handle.stop();
        handle.wait_stopped(self.stop_deadline()).await;
        self.workers.lock().remove(&handle.id);
    }

    /// Stops every worker (teardown); returns how many there were.
    pub async fn stop_all(&self) -> usize {
        let _op = self.ops.lock().await;
        let workers = self.all_workers();
        for worker in &workers {
            worker.stop();
        }
        for worker in &workers {
            worker.wait_stopped(self.stop_deadline()).await;
        }
        self.workers.lock().clear();
        workers.len()
    }

    /// A stop may take the node's drain timeout and its linger; past them (plus a margin) it is
    /// killed.
    pub fn stop_deadline(&self) -> Duration {
        self.settings.drain_timeout + self.settings.drain_linger + Duration::from_secs(10)
    }

    pub fn views(&self, track: Option<TrackKind>) -> Vec<WorkerView> {
        let mut workers: Vec<_> = self.all_workers();
        workers.sort_by_key(|w| (w.track, w.index));
        workers.iter().filter(|w| track.is_none_or(|t| w.track == t)).map(|w| w.view()).collect()
    }

    /// Brings back the workers the record asks for, on each track's config (control-plane
    /// restart). Does not wait for them.
    pub fn resume(self: &Arc<Self>) -> Result<(), ProviderError> {
        let record = self.record();
        for track in TrackKind::BOTH {
            let Some(template) = self.track_template(track)? else { continue };
            let template = Arc::new(template);
            let running = self.track_workers(track).len() as u32;
            for _ in running..record.track(track).replicas {
                self.add_worker(track, template.clone());
            }
        }
        Ok(())
    }
}

pub(crate) fn worker_id(track: TrackKind, index: u32) -> String {
    format!("{}-{index}", track.name())
}
