//! Deletion as the apiserver and its garbage collector do it: preconditions, finalizers
//! (the object stays with a `deletionTimestamp` until they are gone), graceful pod deletion
//! finished by the kubelet, and cascading to dependents through `ownerReferences`.
//!
//! Simplification: the garbage collector runs synchronously inside the delete, so dependents
//! are gone when the owner's DELETE answers (Background and Foreground differ only in order).

use serde_json::{Value, json};

use super::{ChangeKind, Inner, meta, namespaces};
use crate::errors::ApiError;
use crate::resources::{self, RESOURCES, ResourceType};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        match text {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }
}

/// `DeleteOptions` (from the query or the body).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// What a delete did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this is its last state.
    Gone(Value),
    /// Marked with a `deletionTimestamp`, waiting for finalizers or the kubelet.
    Pending(Value),
}

pub(super) fn delete(
    inner: &mut Inner,
    rt: &'static ResourceType,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    let ns = if rt.namespaced { ns } else { "" };
    let current = inner.get(rt, ns, name).cloned().ok_or_else(|| ApiError::not_found(rt, name))?;
    check_preconditions(rt, &current, opts)?;
    if rt.plural == "namespaces" {
        return Ok(namespaces::begin(inner, name));
    }
    let propagation = opts.propagation.unwrap_or_default();
    if meta::is_terminating(&current) {
        return Ok(Deleted::Pending(current));
    }
    if propagation == Propagation::Foreground {
        delete_dependents(inner, rt, &current);
    }
    // No kubelet: only finalizers hold an object (pods go at once, without a grace period).
    if meta::finalizers(&current).is_empty() {
        return Ok(Deleted::Gone(remove(inner, rt, ns, name, propagation)));
    }
    let mut obj = current;
    let seconds = 0;
    let when = time::OffsetDateTime::now_utc();
    let when = when.replace_nanosecond(0).unwrap_or(when);
    let stamp = when.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    let m = meta::metadata_mut(&mut obj);
    m.insert("deletionTimestamp".into(), json!(stamp));
    m.insert("deletionGracePeriodSeconds".into(), json!(seconds));
    if propagation == Propagation::Orphan {
        orphan_dependents(inner, rt, &obj);
    }
    Ok(Deleted::Pending(inner.put(rt, ns, obj, ChangeKind::Modified)))
}

fn check_preconditions(
    rt: &ResourceType,
    current: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let name = meta::name(current);
    if let Some(uid) = &opts.precondition_uid
        && uid != meta::uid(current)
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta::uid(current)
        );
        return Err(ApiError::conflict_because(rt, name, &why));
    }
    if let Some(rv) = &opts.precondition_rv
        && rv != meta::resource_version(current)
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            meta::resource_version(current)
        );
        return Err(ApiError::conflict_because(rt, name, &why));
    }
    Ok(())
}

/// Removes the object for good (a DELETED event) and lets the garbage collector and the
/// namespace controller react.
pub(super) fn remove(
    inner: &mut Inner,
    rt: &'static ResourceType,
    ns: &str,
    name: &str,
    propagation: Propagation,
) -> Value {
    let Some(obj) = inner.get(rt, ns, name).cloned() else { return Value::Null };
    let last = inner.put(rt, ns, obj, ChangeKind::Deleted);
    match propagation {
        Propagation::Orphan => orphan_dependents(inner, rt, &last),
        _ => delete_dependents(inner, rt, &last),
    }
    if rt.namespaced {
        namespaces::finish(inner, ns);
    }
    last
}

/// Objects owned by `owner`: in its namespace, or anywhere for a cluster-scoped owner.
fn dependents(
    inner: &Inner,
    owner_rt: &ResourceType,
    owner: &Value,
) -> Vec<(&'static ResourceType, String, String)> {
    let uid = meta::uid(owner);
    let ns = meta::namespace(owner);
    let mut found = Vec::new();
    for rt in RESOURCES.iter().filter(|r| r.namespaced) {
        let Some(objects) = inner.objects.get(&super::key(rt)) else { continue };
        for ((obj_ns, obj_name), obj) in objects {
            let in_scope = !owner_rt.namespaced || obj_ns == ns;
            if in_scope && meta::owner_uids(obj).iter().any(|u| u == uid) {
                found.push((rt, obj_ns.clone(), obj_name.clone()));
            }
        }
    }
    found
}

fn delete_dependents(inner: &mut Inner, rt: &ResourceType, owner: &Value) {
    for (dep_rt, ns, name) in dependents(inner, rt, owner) {
        let _ = delete(inner, dep_rt, &ns, &name, &DeleteOptions::default());
    }
}

fn orphan_dependents(inner: &mut Inner, rt: &ResourceType, owner: &Value) {
    let uid = meta::uid(owner).to_owned();
    for (dep_rt, ns, name) in dependents(inner, rt, owner) {
        let Some(mut obj) = inner.get(dep_rt, &ns, &name).cloned() else { continue };
        if let Some(refs) =
            obj.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
        }
        inner.put(dep_rt, &ns, obj, ChangeKind::Modified);
    }
}

/// Every object in namespace `ns`, as (type, name, object).
pub(super) fn contents(inner: &Inner, ns: &str) -> Vec<(&'static ResourceType, String, Value)> {
    let mut found = Vec::new();
    for rt in RESOURCES.iter().filter(|r| r.namespaced) {
        let Some(objects) = inner.objects.get(&super::key(rt)) else { continue };
        for ((obj_ns, name), obj) in objects {
            if obj_ns == ns {
                found.push((rt, name.clone(), obj.clone()));
            }
        }
    }
    found
}

pub(super) fn namespace_type() -> &'static ResourceType {
    resources::namespaces()
}
