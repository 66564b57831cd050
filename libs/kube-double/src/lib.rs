//! A Kubernetes API server played over real HTTP, for the tests of ramen's Kubernetes zone
//! provider: no kube-apiserver can be installed where the tests run, so this double stands
//! in for one. Clients talk to it exactly as to a cluster (`kube::Client` from a kubeconfig,
//! bearer token), and it answers as the apiserver does: the REST paths, `Status` errors,
//! resourceVersions, watches, and the controllers that make Deployments, pods and
//! namespaces move.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let double = ramen_kube_double::KubeDouble::start().await?;
//! let client = double.client().await?;
//! assert_eq!(client.apiserver_version().await?.minor, "33");
//! # Ok(()) }
//! ```
//!
//! # Served
//! core/v1 `namespaces` (cluster-scoped), `serviceaccounts`, `secrets`, `configmaps`,
//! `services`, `pods` (+ `log`), `events`; apps/v1 `deployments` (+ `status`, `scale`) and
//! `replicasets`; autoscaling/v2 `horizontalpodautoscalers`; networking.k8s.io/v1
//! `networkpolicies`; policy/v1 `poddisruptionbudgets`; discovery (`/version`, `/api`,
//! `/apis`, group versions). Verbs: get, list (label and field selectors, `limit` and
//! `continue`), watch, create (`generateName`), update, patch (JSON, merge, strategic,
//! server-side apply), delete (propagation, preconditions, finalizers), deletecollection.
//!
//! # Simulated controllers
//! The deployment controller (with ReplicaSets), a scheduler/kubelet for simulated pods
//! whose behaviour the test picks ([`PodBehaviour`]), the HPA controller (clamping only),
//! the namespace controller and the garbage collector. Pods are simulated, unless their
//! behaviour is [`PodBehaviour::Run`]: then the kubelet double runs the container as a local
//! process behind the pod's own loopback IP (`kubelet.rs` says how volumes, paths, probes,
//! restarts and deletion work there).
//!
//! # Where the double simplifies
//! - **No schema**: bodies are stored as sent plus the defaults a client is likely to read
//!   back; only obviously bad bodies are refused (names, labels, selector vs template
//!   labels, containers without name or image). Validate manifests with
//!   `kubernetes-validate` on [`KubeDouble::requests`]. Unknown fields are kept, not pruned.
//! - **Server-side apply** tracks ownership per leaf field with lists atomic; only Apply
//!   managers own fields; conflicts only between appliers (see `apply.rs`).
//! - **Strategic merge patch** knows the merge keys of common pod-spec lists; other lists
//!   are replaced (see `patch.rs`).
//! - **Lists**: continue tokens page over the current state, not a snapshot; `limit` is
//!   honoured even with `resourceVersion=0`; `resourceVersionMatch` is ignored.
//! - **Watches**: selectors filter on the new state (no synthetic DELETED when an object
//!   stops matching); bookmarks each second; the history keeps 10 000 changes.
//! - **Garbage collection** is synchronous: dependents are gone when the owner's DELETE
//!   answers; Foreground and Background differ only in order. Without the kubelet, pods are
//!   deleted at once (no grace period).
//! - **Namespaces**: deletion deletes the content synchronously; conditions report content
//!   and content finalizers as the namespace controller does; the namespace's own
//!   `metadata.finalizers` (see [`KubeDouble::hold_namespace`]) hold it without appearing in
//!   the conditions, as on a cluster. No `default` ServiceAccount or `kube-root-ca.crt`
//!   ConfigMap is created in new namespaces.
//! - **Deployments** roll one pod at a time (surge 1, no unavailability); `minReadySeconds`
//!   and `paused` are ignored; there is one node, `kube-double-node`.
//! - **HPA**: no metrics; replicas are only clamped into `[minReplicas, maxReplicas]`.
//! - **Not served**: RBAC (every holder of the token may do anything), admission webhooks,
//!   dry run, `/api/v1/watch/...` legacy paths, protobuf, table output, aggregated discovery.

mod apply;
mod behaviour;
mod controllers;
mod double;
mod errors;
mod faults;
mod kubeconfig;
mod kubelet;
mod logs;
mod patch;
mod resources;
mod selectors;
mod server;
mod store;

pub use behaviour::{LocalImage, PodBehaviour};
pub use double::{DoubleError, HOLD_FINALIZER, KubeDouble};
pub use errors::ApiError;
pub use faults::{RecordedRequest, RequestMatch};
