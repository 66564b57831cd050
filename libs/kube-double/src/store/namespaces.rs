//! The namespace lifecycle controller, run synchronously after each change in a terminating
//! namespace: delete everything in it, report what is left in `status.conditions`, drop the
//! `kubernetes` spec finalizer once it is empty, and remove the namespace once no finalizer
//! (`metadata.finalizers`, which a test can hold) is left.

use serde_json::{Value, json};

use super::delete::{self, DeleteOptions, Deleted};
use super::{ChangeKind, Inner, meta};

/// DELETE of a namespace: mark it Terminating and delete its content.
pub(super) fn begin(inner: &mut Inner, name: &str) -> Deleted {
    let rt = delete::namespace_type();
    let Some(mut ns) = inner.get(rt, "", name).cloned() else { return Deleted::Gone(Value::Null) };
    if !meta::is_terminating(&ns) {
        meta::metadata_mut(&mut ns).insert("deletionTimestamp".into(), json!(meta::now()));
        ns["status"]["phase"] = json!("Terminating");
        inner.put(rt, "", ns.clone(), ChangeKind::Modified);
    }
    for (obj_rt, obj_name, _) in delete::contents(inner, name) {
        let _ = delete::delete(inner, obj_rt, name, &obj_name, &DeleteOptions::default());
    }
    finish(inner, name);
    match inner.get(rt, "", name) {
        Some(ns) => Deleted::Pending(ns.clone()),
        None => Deleted::Gone(ns),
    }
}

/// Re-evaluates a terminating namespace after a change in it.
pub(super) fn finish(inner: &mut Inner, name: &str) {
    let rt = delete::namespace_type();
    let Some(current) = inner.get(rt, "", name).cloned() else { return };
    if !meta::is_terminating(&current) {
        return;
    }
    let contents = delete::contents(inner, name);
    let mut ns = current.clone();
    ns["status"]["conditions"] = json!(conditions(&current, &contents));
    if contents.is_empty()
        && let Some(list) = ns.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut)
    {
        list.retain(|f| f != "kubernetes");
    }
    let spec_finalizers = meta::strings(ns.pointer("/spec/finalizers"));
    if contents.is_empty() && spec_finalizers.is_empty() && meta::finalizers(&ns).is_empty() {
        inner.put(rt, "", ns, ChangeKind::Deleted);
    } else if ns != current {
        inner.put(rt, "", ns, ChangeKind::Modified);
    }
}

type Contents = [(&'static crate::resources::ResourceType, String, Value)];

/// The conditions the namespace controller writes while it deletes content.
fn conditions(current: &Value, contents: &Contents) -> Vec<Value> {
    let mut by_type: Vec<(String, usize)> = Vec::new();
    let mut by_finalizer: Vec<(String, usize)> = Vec::new();
    for (rt, _, obj) in contents {
        bump(&mut by_type, &rt.qualified());
        for finalizer in meta::finalizers(obj) {
            bump(&mut by_finalizer, &finalizer);
        }
    }
    let remaining = (!by_type.is_empty()).then(|| {
        let parts: Vec<String> =
            by_type.iter().map(|(t, n)| format!("{t} has {n} resource instances")).collect();
        format!("Some resources are remaining: {}", parts.join(", "))
    });
    let finalizers = (!by_finalizer.is_empty()).then(|| {
        let parts: Vec<String> =
            by_finalizer.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
        format!("Some content in the namespace has finalizers remaining: {}", parts.join(", "))
    });
    let old = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    vec![
        condition(
            &old,
            "NamespaceDeletionDiscoveryFailure",
            false,
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        condition(
            &old,
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        condition(
            &old,
            "NamespaceDeletionContentFailure",
            false,
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        match &remaining {
            Some(message) => {
                condition(&old, "NamespaceContentRemaining", true, "SomeResourcesRemain", message)
            }
            None => condition(
                &old,
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed",
            ),
        },
        match &finalizers {
            Some(message) => condition(
                &old,
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                message,
            ),
            None => condition(
                &old,
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
            ),
        },
    ]
}

fn bump(counts: &mut Vec<(String, usize)>, key: &str) {
    match counts.iter_mut().find(|(k, _)| k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key.to_owned(), 1)),
    }
}

/// A condition whose `lastTransitionTime` only moves when its status changes.
fn condition(old: &[Value], kind: &str, status: bool, reason: &str, message: &str) -> Value {
    let status = if status { "True" } else { "False" };
    let previous = old.iter().find(|c| c["type"] == kind);
    let since = match previous {
        Some(p) if p["status"] == status => p["lastTransitionTime"].clone(),
        _ => json!(meta::now()),
    };
    json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since})
}
