//! How simulated pods behave, chosen by the test per namespace and per deployment. The
//! choice is made when a pod is first seen, so a change affects pods created after it;
//! `KubeDouble::reevaluate_pods` applies it to existing pods too.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

pub use crate::kubelet::LocalImage;

/// What the simulated scheduler and kubelet make of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodBehaviour {
    /// Scheduled, then Running and Ready (containers ready) once `after` has passed.
    Ready { after: Duration },
    /// Never scheduled: Pending with `PodScheduled=False`, reason `Unschedulable`, and this
    /// message (e.g. "0/3 nodes are available: 3 Insufficient cpu.").
    Unschedulable { message: String },
    /// Scheduled, but the image never pulls: waiting `ErrImagePull`, then `ImagePullBackOff`.
    ImagePullBackOff { message: String },
    /// Scheduled and started, but every run exits with `exit_code` after printing
    /// `log_lines`: waiting `CrashLoopBackOff`, `restartCount` growing each second.
    CrashLoopBackOff { exit_code: i32, log_lines: Vec<String> },
    /// Run for real by the kubelet double: the pod's container is a local process of this
    /// image (see [`LocalImage`] and the `kubelet` module for what it serves).
    Run(LocalImage),
}

impl PodBehaviour {
    pub fn ready() -> Self {
        Self::Ready { after: Duration::ZERO }
    }
}

/// A behaviour given to one pod, and when.
#[derive(Debug, Clone)]
pub(crate) struct Assigned {
    pub behaviour: PodBehaviour,
    pub since: Instant,
}

#[derive(Debug)]
pub(crate) struct Behaviours {
    default: PodBehaviour,
    by_namespace: HashMap<String, PodBehaviour>,
    by_deployment: HashMap<(String, String), PodBehaviour>,
    assigned: HashMap<String, Assigned>,
}

impl Behaviours {
    pub fn new(default: PodBehaviour) -> Mutex<Self> {
        Mutex::new(Self {
            default,
            by_namespace: HashMap::new(),
            by_deployment: HashMap::new(),
            assigned: HashMap::new(),
        })
    }

    pub fn set_namespace(&mut self, ns: &str, behaviour: PodBehaviour) {
        self.by_namespace.insert(ns.to_owned(), behaviour);
    }

    pub fn set_deployment(&mut self, ns: &str, deployment: &str, behaviour: PodBehaviour) {
        self.by_deployment.insert((ns.to_owned(), deployment.to_owned()), behaviour);
    }

    /// Forgets the behaviours given to the pods of `ns`, so they are chosen again.
    pub fn reevaluate(&mut self, pod_uids: &[String]) {
        for uid in pod_uids {
            self.assigned.remove(uid);
        }
    }

    /// The behaviour of a pod, chosen now if it has none yet.
    pub fn assign(&mut self, uid: &str, ns: &str, deployment: Option<&str>) -> Assigned {
        if let Some(assigned) = self.assigned.get(uid) {
            return assigned.clone();
        }
        let behaviour = deployment
            .and_then(|d| self.by_deployment.get(&(ns.to_owned(), d.to_owned())))
            .or_else(|| self.by_namespace.get(ns))
            .unwrap_or(&self.default)
            .clone();
        let assigned = Assigned { behaviour, since: Instant::now() };
        self.assigned.insert(uid.to_owned(), assigned.clone());
        assigned
    }

    pub fn forget(&mut self, uid: &str) {
        self.assigned.remove(uid);
    }
}
