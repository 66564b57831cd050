//! The object store: every served object as JSON, keyed by type, namespace and name (in key
//! order, as etcd lists), one global resourceVersion counter as etcd's revision, and a
//! bounded history of changes that watches replay from. All writes go through one lock so
//! each is atomic and gets the next resourceVersion.

pub mod defaults;
mod delete;
pub mod meta;
mod namespaces;
mod validate;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::broadcast;

pub use delete::{DeleteOptions, Deleted, Propagation};

use crate::errors::ApiError;
use crate::resources::{self, ResourceType};

/// How many changes are kept for watches to resume from; older resourceVersions get 410.
const HISTORY: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed write, as a watch sees it.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub rt: &'static ResourceType,
    pub namespace: String,
    pub kind: ChangeKind,
    pub object: Value,
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A client's PUT/PATCH of the resource: status is kept when the type has a status
    /// subresource.
    Main,
    /// A client's write of `/status`: only status changes.
    Status,
    /// A simulated controller: anything changes, no validation.
    Controller,
}

type Objects = BTreeMap<(String, String), Value>;

struct Inner {
    rv: u64,
    objects: HashMap<(&'static str, &'static str), Objects>,
    history: VecDeque<Arc<Change>>,
    /// Watches from a resourceVersion below this get 410 Gone.
    compacted: u64,
    /// Numbers cluster IPs.
    ordinal: u64,
    changes: broadcast::Sender<Arc<Change>>,
}

/// Live changes, after the kept ones a watch starts from.
pub type ChangeReceiver = broadcast::Receiver<Arc<Change>>;

/// The double's state; shared by the HTTP server, the controllers and the test's controls.
pub struct Store {
    inner: Mutex<Inner>,
    changes: broadcast::Sender<Arc<Change>>,
}

fn key(rt: &ResourceType) -> (&'static str, &'static str) {
    (rt.group, rt.plural)
}

impl Default for Store {
    fn default() -> Self {
        let (changes, _) = broadcast::channel(16_384);
        let inner = Inner {
            rv: 1,
            objects: HashMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            ordinal: 0,
            changes: changes.clone(),
        };
        Self { inner: Mutex::new(inner), changes }
    }
}

impl Store {
    /// A store holding the namespaces every cluster has.
    pub fn with_system_namespaces() -> Self {
        let store = Self::default();
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            store.create(resources::namespaces(), "", ns).expect("system namespaces are valid");
        }
        store
    }

    /// Watches and continue tokens from below this resourceVersion are expired.
    pub fn compacted(&self) -> u64 {
        self.inner.lock().compacted
    }

    pub fn current_rv(&self) -> u64 {
        self.inner.lock().rv
    }

    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Value> {
        self.inner.lock().get(rt, ns, name).cloned()
    }

    /// Objects of `rt` (in one namespace, or all) in key order, and the list's resourceVersion.
    pub fn list(&self, rt: &ResourceType, ns: Option<&str>) -> (Vec<Value>, u64) {
        let inner = self.inner.lock();
        let items = inner
            .objects
            .get(&key(rt))
            .map(|objects| {
                objects
                    .iter()
                    .filter(|((n, _), _)| ns.is_none_or(|ns| ns == n))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default();
        (items, inner.rv)
    }

    pub fn create(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        obj: Value,
    ) -> Result<Value, ApiError> {
        self.inner.lock().create(rt, ns, obj)
    }

    /// Replaces an object; a non-empty `metadata.resourceVersion` in `obj` must be current.
    pub fn update(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        write: Write,
    ) -> Result<Value, ApiError> {
        self.inner.lock().update(rt, ns, name, obj, write)
    }

    /// Changes an object in place under the lock (controllers: no lost updates, no conflicts).
    pub fn mutate(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        let mut inner = self.inner.lock();
        let mut obj =
            inner.get(rt, ns, name).cloned().ok_or_else(|| ApiError::not_found(rt, name))?;
        change(&mut obj);
        meta::metadata_mut(&mut obj).remove("resourceVersion");
        inner.update(rt, ns, name, obj, Write::Controller)
    }

    pub fn delete(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        delete::delete(&mut self.inner.lock(), rt, ns, name, opts)
    }

    /// Removes a pod whose graceful deletion the kubelet has finished.
    pub fn finish_pod_deletion(&self, ns: &str, name: &str) {
        let mut inner = self.inner.lock();
        if inner.get(resources::pods(), ns, name).is_some() {
            delete::remove(&mut inner, resources::pods(), ns, name, Propagation::Background);
        }
    }

    /// Drops the watch history: watches from any resourceVersion handed out so far get 410
    /// Gone. The counter moves on by one so a fresh list has a resourceVersion to watch from.
    pub fn expire_history(&self) {
        let mut inner = self.inner.lock();
        inner.rv += 1;
        inner.compacted = inner.rv;
        inner.history.clear();
    }

    /// Every change committed since the store started, as it happens (controllers).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    /// The kept changes after `rv` and a receiver for the ones to come, taken atomically;
    /// `None` when `rv` is older than the kept history.
    pub fn watch_from(&self, rv: u64) -> Option<(Vec<Arc<Change>>, ChangeReceiver)> {
        let inner = self.inner.lock();
        if rv < inner.compacted {
            return None;
        }
        let backlog = inner.history.iter().filter(|c| c.rv > rv).cloned().collect();
        Some((backlog, self.changes.subscribe()))
    }
}

impl Inner {
    fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<&Value> {
        self.objects.get(&key(rt))?.get(&(ns.to_owned(), name.to_owned()))
    }

    fn objects_mut(&mut self, rt: &ResourceType) -> &mut Objects {
        self.objects.entry(key(rt)).or_default()
    }

    /// Commits `obj` under the next resourceVersion and tells the watches.
    fn put(
        &mut self,
        rt: &'static ResourceType,
        ns: &str,
        mut obj: Value,
        kind: ChangeKind,
    ) -> Value {
        self.rv += 1;
        let rv = self.rv;
        meta::metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let name = meta::name(&obj).to_owned();
        if kind == ChangeKind::Deleted {
            self.objects_mut(rt).remove(&(ns.to_owned(), name));
        } else {
            self.objects_mut(rt).insert((ns.to_owned(), name), obj.clone());
        }
        let change =
            Arc::new(Change { rv, rt, namespace: ns.to_owned(), kind, object: obj.clone() });
        self.history.push_back(change.clone());
        if self.history.len() > HISTORY
            && let Some(dropped) = self.history.pop_front()
        {
            self.compacted = dropped.rv;
        }
        let _ = self.changes.send(change);
        obj
    }

    fn create(
        &mut self,
        rt: &'static ResourceType,
        ns: &str,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        let ns = if rt.namespaced { ns } else { "" };
        check_body(rt, &obj)?;
        let meta = meta::metadata_mut(&mut obj);
        let body_ns = meta.get("namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let generate = meta.get("generateName").and_then(Value::as_str).map(str::to_owned);
        if meta.get("name").and_then(Value::as_str).is_none_or(str::is_empty)
            && let Some(prefix) = generate.filter(|p| !p.is_empty())
        {
            meta.insert("name".into(), json!(format!("{prefix}{}", meta::random_suffix(5))));
        }
        let name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if rt.namespaced {
            self.check_namespace_accepts(rt, ns, &name)?;
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        for field in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"] {
            meta.remove(field);
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(meta::now()));
        if rt.generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        obj["apiVersion"] = json!(rt.api_version());
        obj["kind"] = json!(rt.kind);
        self.ordinal += 1;
        defaults::apply(rt, &mut obj, self.ordinal);
        validate::validate(rt, &obj)?;
        if self.get(rt, ns, &name).is_some() {
            return Err(ApiError::already_exists(rt, &name));
        }
        Ok(self.put(rt, ns, obj, ChangeKind::Added))
    }

    /// 404 for a missing namespace, 403 for one being terminated.
    fn check_namespace_accepts(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let namespaces = resources::namespaces();
        let Some(namespace) = self.get(namespaces, "", ns) else {
            return Err(ApiError::not_found(namespaces, ns));
        };
        if meta::is_terminating(namespace) {
            let why = format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            );
            return Err(ApiError::forbidden(rt, name, &why));
        }
        Ok(())
    }

    fn update(
        &mut self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        new: Value,
        write: Write,
    ) -> Result<Value, ApiError> {
        let ns = if rt.namespaced { ns } else { "" };
        let current =
            self.get(rt, ns, name).cloned().ok_or_else(|| ApiError::not_found(rt, name))?;
        if write != Write::Controller {
            check_body(rt, &new)?;
        }
        let sent_rv = meta::resource_version(&new);
        if !sent_rv.is_empty() && sent_rv != meta::resource_version(&current) {
            return Err(ApiError::conflict(rt, name));
        }
        let body_name = meta::name(&new);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let mut obj = merge_update(rt, &current, new, write);
        if write == Write::Main {
            defaults::apply(rt, &mut obj, self.ordinal);
            validate::validate(rt, &obj)?;
        }
        if rt.generation && obj.get("spec") != current.get("spec") {
            let generation = current.pointer("/metadata/generation").and_then(Value::as_i64);
            meta::metadata_mut(&mut obj)
                .insert("generation".into(), json!(generation.unwrap_or(1) + 1));
        }
        if without_rv(&obj) == without_rv(&current) {
            return Ok(current);
        }
        if rt.plural == "namespaces" && meta::is_terminating(&obj) {
            self.put(rt, ns, obj, ChangeKind::Modified);
            namespaces::finish(self, name);
            return Ok(self.get(rt, ns, name).cloned().unwrap_or(current));
        }
        if meta::is_terminating(&obj) && meta::finalizers(&obj).is_empty() {
            self.put(rt, ns, obj.clone(), ChangeKind::Modified);
            return Ok(delete::remove(self, rt, ns, name, Propagation::Background));
        }
        Ok(self.put(rt, ns, obj, ChangeKind::Modified))
    }
}

/// The object an update stores: the sent body, with the fields the server owns kept from
/// the current object and, per `write`, the status or everything but the status kept too.
fn merge_update(rt: &ResourceType, current: &Value, new: Value, write: Write) -> Value {
    if write == Write::Status {
        let mut obj = current.clone();
        obj["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        return obj;
    }
    let mut obj = new;
    obj["apiVersion"] = json!(rt.api_version());
    obj["kind"] = json!(rt.kind);
    if write == Write::Main && rt.status_subresource {
        match current.get("status") {
            Some(status) => obj["status"] = status.clone(),
            None => {
                obj.as_object_mut().map(|o| o.remove("status"));
            }
        }
    }
    // The server owns these; what a client sends for them is ignored (generation is
    // recomputed by the caller).
    let server_owned = [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ];
    let kept: Vec<(&str, Option<Value>)> = server_owned
        .iter()
        .map(|f| (*f, current.pointer(&format!("/metadata/{f}")).cloned()))
        .collect();
    let meta = meta::metadata_mut(&mut obj);
    for (field, value) in kept {
        match value {
            Some(v) => meta.insert(field.into(), v),
            None => meta.remove(field),
        };
    }
    if !meta.contains_key("managedFields")
        && let Some(fields) = current.pointer("/metadata/managedFields")
    {
        meta.insert("managedFields".into(), fields.clone());
    }
    obj
}

fn without_rv(obj: &Value) -> Value {
    let mut obj = obj.clone();
    meta::metadata_mut(&mut obj).remove("resourceVersion");
    obj
}

/// A body that is not an object, or names another kind, is refused before anything else.
fn check_body(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: the body is not a JSON object",
            rt.kind, rt.version, rt.kind
        )));
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or(rt.kind);
    let api_version = obj.get("apiVersion").and_then(Value::as_str).map(str::to_owned);
    if kind != rt.kind || api_version.is_some_and(|v| v != rt.api_version()) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({}), or the kind ({kind}) is not {}",
            obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default(),
            rt.api_version(),
            rt.kind
        )));
    }
    Ok(())
}
