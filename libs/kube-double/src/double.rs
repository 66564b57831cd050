//! `KubeDouble`: starts the HTTP server and the simulated controllers, and gives the test
//! its controls (state, recorded requests, pod behaviour, faults, shutdown).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ramen_lifecycle::TaskCenter;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::behaviour::{Behaviours, PodBehaviour};
use crate::controllers::{self, Cluster, PodIps};
use crate::errors::ApiError;
use crate::faults::{Faults, RecordedRequest, RequestMatch};
use crate::logs::Logs;
use crate::resources::{self, ResourceType};
use crate::server::{self, Shared};
use crate::store::Store;

/// The finalizer `hold_namespace` puts on a namespace.
pub const HOLD_FINALIZER: &str = "kube-double.ramen.dev/hold";

/// Why the double could not start or answer a control call.
#[derive(Debug, thiserror::Error)]
pub enum DoubleError {
    #[error("binding the double's listener: {0}")]
    Bind(#[source] std::io::Error),
    #[error("writing the kubeconfig: {0}")]
    Kubeconfig(#[source] std::io::Error),
    #[error("building a kube client for the double: {0}")]
    Client(String),
    #[error("no served resource is {api_version} {kind}")]
    UnknownKind { api_version: String, kind: String },
    #[error("creating the kubelet's pod sandboxes: {0}")]
    Sandbox(#[source] std::io::Error),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// A Kubernetes API server played over HTTP on 127.0.0.1 (a kernel-chosen port), with
/// simulated controllers; see the crate docs for what it serves and simplifies.
pub struct KubeDouble {
    shared: Arc<Shared>,
    cluster: Arc<Cluster>,
    tasks: TaskCenter,
    root: CancellationToken,
    url: String,
    sandboxes: std::path::PathBuf,
}

impl KubeDouble {
    /// Starts a double whose pods are simulated (Ready at once unless told otherwise).
    pub async fn start() -> Result<Self, DoubleError> {
        let root = CancellationToken::new();
        let tasks = TaskCenter::new(&root);
        let store = Arc::new(Store::with_system_namespaces());
        let logs = Arc::new(Logs::default());
        let default = PodBehaviour::ready();
        let cluster = Arc::new(Cluster {
            store: store.clone(),
            logs: logs.clone(),
            behaviours: Behaviours::new(default),
            ips: PodIps::default(),
        });
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(DoubleError::Bind)?;
        let address = listener.local_addr().map_err(DoubleError::Bind)?;
        let shared = Arc::new(Shared {
            store,
            logs,
            token: format!("kube-double-{}", uuid::Uuid::new_v4().simple()),
            address: Mutex::new(address.to_string()),
            requests: Mutex::new(Vec::new()),
            faults: Mutex::new(Faults::default()),
            watch_epoch: tokio::sync::watch::channel(0).0,
            shutdown: root.clone(),
        });
        let router = server::router(shared.clone());
        tasks.spawn("kube-double-http", move |token| async move {
            let served =
                axum::serve(listener, router).with_graceful_shutdown(token.cancelled_owned());
            if let Err(err) = served.await {
                tracing::warn!(%err, "the kube double's HTTP server stopped");
            }
        });
        let kubelet = crate::kubelet::Kubelet::new().map_err(DoubleError::Sandbox)?;
        let sandboxes = kubelet.root().to_owned();
        spawn_controllers(&tasks, &cluster, kubelet);
        Ok(Self { shared, cluster, tasks, root, url: format!("http://{address}"), sandboxes })
    }

    /// Where the kubelet double keeps the sandboxes of the pods it runs (their volumes): every
    /// process it started names a path under it on its command line.
    pub fn kubelet_dir(&self) -> &Path {
        &self.sandboxes
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bearer token every request must carry.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// The kubeconfig YAML for this double (its one context is `context`).
    pub fn kubeconfig(&self, context: &str) -> String {
        crate::kubeconfig::render(&self.url, self.token(), context)
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`.
    pub fn write_kubeconfig(&self, path: &Path, context: &str) -> Result<(), DoubleError> {
        std::fs::write(path, self.kubeconfig(context)).map_err(DoubleError::Kubeconfig)
    }

    /// A `kube::Client` for this double, built from its kubeconfig.
    pub async fn client(&self) -> Result<kube::Client, DoubleError> {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig("kube-double"))
            .map_err(|e| DoubleError::Client(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| DoubleError::Client(e.to_string()))?;
        kube::Client::try_from(config).map_err(|e| DoubleError::Client(e.to_string()))
    }

    fn resource(api_version: &str, kind: &str) -> Result<&'static ResourceType, DoubleError> {
        resources::by_kind(api_version, kind).ok_or_else(|| DoubleError::UnknownKind {
            api_version: api_version.into(),
            kind: kind.into(),
        })
    }

    /// The stored object (`ns` is ignored for cluster-scoped kinds).
    pub fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
        let rt = Self::resource(api_version, kind).ok()?;
        self.shared.store.get(rt, if rt.namespaced { ns } else { "" }, name)
    }

    /// The stored objects of a kind, in one namespace or (`None`) all.
    pub fn list(&self, api_version: &str, kind: &str, ns: Option<&str>) -> Vec<Value> {
        Self::resource(api_version, kind)
            .map(|rt| self.shared.store.list(rt, ns).0)
            .unwrap_or_default()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().clone()
    }

    pub fn clear_requests(&self) {
        self.shared.requests.lock().clear();
    }

    /// How pods created from now on in `ns` behave.
    pub fn set_pod_behaviour(&self, ns: &str, behaviour: PodBehaviour) {
        self.cluster.behaviours.lock().set_namespace(ns, behaviour);
    }

    /// How pods created from now on for one Deployment behave (over the namespace's).
    pub fn set_deployment_pod_behaviour(
        &self,
        ns: &str,
        deployment: &str,
        behaviour: PodBehaviour,
    ) {
        self.cluster.behaviours.lock().set_deployment(ns, deployment, behaviour);
    }

    /// Chooses the behaviour of the existing pods of `ns` again (after a change).
    pub fn reevaluate_pods(&self, ns: &str) {
        let (pods, _) = self.shared.store.list(resources::pods(), Some(ns));
        let uids: Vec<String> =
            pods.iter().map(|p| crate::store::meta::uid(p).to_owned()).collect();
        self.cluster.behaviours.lock().reevaluate(&uids);
    }

    /// Adds a line to a container's log (`pods/log`) of a simulated pod.
    pub fn append_pod_log(&self, ns: &str, pod: &str, container: &str, line: &str) {
        self.shared.logs.append(ns, pod, container, line);
    }

    /// Puts a finalizer on a namespace, so its deletion stays `Terminating` until released.
    pub fn hold_namespace(&self, ns: &str) -> Result<(), DoubleError> {
        self.shared.store.mutate(resources::namespaces(), "", ns, |o| {
            let list = o["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
            if !list.iter().any(|f| f == HOLD_FINALIZER) {
                let mut list = list;
                list.push(json!(HOLD_FINALIZER));
                o["metadata"]["finalizers"] = json!(list);
            }
        })?;
        Ok(())
    }

    /// Removes the finalizer of [`hold_namespace`](Self::hold_namespace).
    pub fn release_namespace(&self, ns: &str) -> Result<(), DoubleError> {
        self.shared.store.mutate(resources::namespaces(), "", ns, |o| {
            if let Some(list) = o["metadata"]["finalizers"].as_array_mut() {
                list.retain(|f| f != HOLD_FINALIZER);
            }
        })?;
        Ok(())
    }

    /// The next `count` requests matching `matcher` answer `status` (a `Status` body with
    /// the reason for the code; 429 carries `Retry-After: 1` as the apiserver's
    /// max-in-flight limit sends it). Note that `kube::Client` retries 429, 503 and 504 by
    /// itself (a few times), so a large count is needed for the caller to see them.
    pub fn fail_next(&self, matcher: RequestMatch, status: u16, count: usize) {
        self.shared.faults.lock().fail_next(matcher, status, count);
    }

    /// Drops every fault not yet used.
    pub fn clear_faults(&self) {
        self.shared.faults.lock().clear();
    }

    /// The next PUT or PATCH of this object answers 409 Conflict, as if another writer had
    /// changed it first.
    pub fn conflict_next_update(&self, kind: &str, ns: &str, name: &str) {
        self.shared.faults.lock().conflict_next_update(kind, ns, name);
    }

    /// Compacts the watch history and ends every open watch: a watch resumed from any
    /// resourceVersion handed out so far gets 410 Gone, so clients relist.
    pub fn expire_watch_history(&self) {
        self.shared.store.expire_history();
        self.shared.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Stops the controllers and the server.
    pub async fn shutdown(&self) {
        self.root.cancel();
        if let Err(err) = self.tasks.shutdown(Duration::from_secs(5)).await {
            tracing::warn!(%err, "kube double tasks did not stop in time");
        }
    }
}

impl Drop for KubeDouble {
    fn drop(&mut self) {
        self.root.cancel();
    }
}

fn spawn_controllers(tasks: &TaskCenter, cluster: &Arc<Cluster>, kubelet: crate::kubelet::Kubelet) {
    let c = cluster.clone();
    tasks.spawn("kube-double-deployment-controller", move |token| async move {
        let progress = Arc::new(Mutex::new(controllers::deployment::Progress::default()));
        controllers::run_loop(c, token, move |cluster| {
            let progress = progress.clone();
            async move { controllers::deployment::reconcile_all(&cluster, &mut progress.lock()) }
        })
        .await
    });
    let c = cluster.clone();
    tasks.spawn("kube-double-pod-simulator", move |token| {
        controllers::run_loop(c, token, |cluster| async move {
            controllers::pods::reconcile_all(&cluster)
        })
    });
    let c = cluster.clone();
    let kubelet = Arc::new(tokio::sync::Mutex::new(kubelet));
    tasks.spawn("kube-double-kubelet", move |token| {
        controllers::run_loop(c, token, move |cluster| {
            let kubelet = kubelet.clone();
            async move { crate::kubelet::reconcile_all(&cluster, &mut *kubelet.lock().await).await }
        })
    });
    let c = cluster.clone();
    tasks.spawn("kube-double-hpa-controller", move |token| {
        controllers::run_loop(c, token, |cluster| async move {
            controllers::hpa::reconcile_all(&cluster)
        })
    });
}
