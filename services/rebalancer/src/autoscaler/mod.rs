//! The autoscaler: keeps each placement's stable workers between its count and twice the count
//! from the measured load ([`hysteresis`]), through the zone-manager's `ScaleTrack`. That is for
//! local zones: on a Kubernetes zone the stable track's HPA has the same bounds and owns the
//! Deployment's replicas, so the autoscaler leaves those cells alone (two controllers on one
//! replica count would undo each other's steps). Only the scheduler leader runs it; each step is audited as `placement.autoscale` by actor `scheduler` (the
//! zone-manager audits the `ScaleTrack` it receives too).

pub mod hysteresis;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ramen_lifecycle::TaskCenter;

pub use hysteresis::{Decision, Track};

use crate::cells::Snapshot;
use crate::ports::{AuditPort, AuditRecord, ZonePort};
use crate::settings::Settings;

type Key = (String, String);

#[derive(Default)]
struct State {
    tracks: HashMap<Key, Track>,
    /// Placements with a `ScaleTrack` call in flight: not observed until it returns.
    busy: std::collections::HashSet<Key>,
}

pub struct Autoscaler {
    zones: Arc<dyn ZonePort>,
    audit: Arc<dyn AuditPort>,
    tasks: TaskCenter,
    up_after: Duration,
    down_after: Duration,
    timeout: Duration,
    state: Arc<Mutex<State>>,
}

impl Autoscaler {
    pub fn new(
        zones: Arc<dyn ZonePort>,
        audit: Arc<dyn AuditPort>,
        tasks: TaskCenter,
        settings: &Settings,
    ) -> Self {
        Self {
            zones,
            audit,
            tasks,
            up_after: settings.scale_up_after,
            down_after: settings.scale_down_after,
            timeout: settings.scale_timeout,
            state: Arc::default(),
        }
    }

    /// The target of a placement, when this replica runs the autoscaler and has one.
    pub fn desired(&self, group: &str, zone: &str) -> Option<u32> {
        let state = self.state.lock();
        state.tracks.get(&(group.to_owned(), zone.to_owned())).map(|t| t.desired).filter(|d| *d > 0)
    }

    /// Forgets everything (leadership lost: the next leader measures afresh).
    pub fn clear(&self) {
        self.state.lock().tracks.clear();
    }

    /// Observes every cell of a placement at `now` and starts the scale calls decided.
    pub fn evaluate(&self, snapshot: &Snapshot, now: i64) {
        let mut steps = Vec::new();
        {
            let mut state = self.state.lock();
            let State { tracks, busy } = &mut *state;
            tracks.retain(|key, _| snapshot.cells.contains_key(key));
            for (key, cell) in &snapshot.cells {
                if cell.min_workers == 0 || cell.cluster_autoscaled || busy.contains(key) {
                    continue;
                }
                let track = tracks.entry(key.clone()).or_default();
                let decision = track.observe(
                    now,
                    cell.state,
                    cell.stable_workers,
                    cell.min_workers,
                    cell.max_workers,
                    hysteresis::Windows { up_after: self.up_after, down_after: self.down_after },
                );
                if let Decision::Scale { from, to } = decision {
                    busy.insert(key.clone());
                    steps.push((key.clone(), from, to, cell.state));
                }
            }
        }
        for ((group, zone), from, to, state) in steps {
            self.spawn_scale(group, zone, from, to, format!("{state:?}").to_lowercase());
        }
    }

    fn spawn_scale(&self, group: String, zone: String, from: u32, to: u32, signal: String) {
        let (zones, audit, state, timeout) =
            (self.zones.clone(), self.audit.clone(), self.state.clone(), self.timeout);
        self.tasks.spawn(format!("autoscale:{group}/{zone}"), move |_stop| async move {
            tracing::info!(%group, %zone, from, to, %signal, "autoscaling stable workers");
            let caller = crate::model::scheduler();
            let result = zones.scale_stable(&caller, &group, &zone, to, timeout).await;
            let key = (group.clone(), zone.clone());
            {
                let mut state = state.lock();
                state.busy.remove(&key);
                if result.is_err()
                    && let Some(track) = state.tracks.get_mut(&key)
                {
                    track.revert(from);
                }
            }
            let mut details = BTreeMap::from([
                ("from".to_owned(), from.to_string()),
                ("to".to_owned(), to.to_string()),
                ("signal".to_owned(), format!("sustained {signal}")),
            ]);
            match &result {
                Ok(ready) => details.insert("ready".to_owned(), ready.to_string()),
                Err(err) => details.insert("error".to_owned(), err.to_string()),
            };
            let entry = AuditRecord {
                id: uuid::Uuid::now_v7().to_string(),
                actor: caller.actor.clone(),
                action: "placement.autoscale".into(),
                group: group.clone(),
                target: format!("track/{zone}/TRACK_WORKER"),
                success: result.is_ok(),
                request_id: String::new(),
                details,
            };
            if let Err(err) = audit.append(entry).await {
                tracing::warn!(%err, %group, %zone, "autoscale audit entry not appended");
            }
        });
    }
}
