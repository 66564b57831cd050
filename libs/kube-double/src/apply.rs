//! Server-side apply (`application/apply-patch+yaml` with `fieldManager`, `force`).
//!
//! Ownership is tracked per field manager in `metadata.managedFields` (`FieldsV1`), as the
//! apiserver does, at the granularity of leaf fields: a re-apply sets every field it names,
//! removes the fields this manager applied before and no longer names (unless another
//! manager also applied them), and leaves fields nobody applied alone — so `spec.replicas`
//! set by an HPA survives an apply that omits it.
//!
//! Simplifications: lists are atomic (a `containers` list is owned whole, not merged by
//! name); only Apply operations own fields (PUT/PATCH writers record no ownership, so they
//! never conflict with an applier); a conflict is a field another applier owns with a
//! different value, answered 409 unless `force=true`, which takes the field over.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::store::meta;

type Path = Vec<String>;

/// Parses an apply body: JSON (what kube sends) or YAML.
pub fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return Ok(value);
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// The object to store after `manager` applies `applied` over `current` (`None`: create).
pub fn apply(
    rt: &ResourceType,
    current: Option<&Value>,
    applied: Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let paths = leaf_paths(&applied);
    let Some(current) = current else {
        let mut obj = applied;
        set_managers(&mut obj, vec![(manager.to_owned(), paths)], rt);
        return Ok(obj);
    };
    let name = meta::name(current);
    let sent_rv = meta::resource_version(&applied);
    if !sent_rv.is_empty() && sent_rv != meta::resource_version(current) {
        return Err(ApiError::conflict(rt, name));
    }
    let mut managers = managers(current);
    let conflicts = conflicts(current, &applied, &paths, &managers, manager);
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(rt, name, &conflicts));
    }
    let previous =
        managers.iter().find(|(m, _)| m == manager).map(|(_, p)| p.clone()).unwrap_or_default();
    // Forcing takes the conflicting fields over; fields applied with the same value stay
    // shared, as the apiserver records co-ownership.
    for (other, path) in &conflicts {
        if let Some(entry) = managers.iter_mut().find(|entry| &entry.0 == other) {
            entry.1.remove(path);
        }
    }
    let mut obj = current.clone();
    for dropped in previous.difference(&paths) {
        if !managers.iter().any(|(m, owned)| m != manager && owned.contains(dropped)) {
            remove_path(&mut obj, dropped);
        }
    }
    for path in &paths {
        if let Some(value) = get_path(&applied, path) {
            set_path(&mut obj, path, value.clone());
        }
    }
    managers.retain(|entry| entry.0 != manager && !entry.1.is_empty());
    managers.push((manager.to_owned(), paths));
    set_managers(&mut obj, managers, rt);
    Ok(obj)
}

/// Leaf fields of an applied object: every scalar, list or empty object, skipping what the
/// server owns (status, type meta, metadata other than labels, annotations, finalizers and
/// owner references).
fn leaf_paths(applied: &Value) -> BTreeSet<Path> {
    let mut paths = BTreeSet::new();
    let Some(root) = applied.as_object() else { return paths };
    for (key, value) in root {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
                    if let Some(v) = value.get(field) {
                        collect(v, vec!["metadata".into(), field.into()], &mut paths);
                    }
                }
            }
            _ => collect(value, vec![key.clone()], &mut paths),
        }
    }
    paths
}

fn collect(value: &Value, at: Path, paths: &mut BTreeSet<Path>) {
    match value.as_object() {
        Some(map) if !map.is_empty() => {
            for (key, child) in map {
                let mut path = at.clone();
                path.push(key.clone());
                collect(child, path, paths);
            }
        }
        _ => {
            paths.insert(at);
        }
    }
}

fn conflicts(
    current: &Value,
    applied: &Value,
    paths: &BTreeSet<Path>,
    managers: &[(String, BTreeSet<Path>)],
    me: &str,
) -> Vec<(String, Path)> {
    let mut found = Vec::new();
    for (other, owned) in managers.iter().filter(|(m, _)| m != me) {
        for path in paths.intersection(owned) {
            if get_path(current, path) != get_path(applied, path) {
                found.push((other.clone(), path.clone()));
            }
        }
    }
    found
}

fn conflict_error(rt: &ResourceType, name: &str, conflicts: &[(String, Path)]) -> ApiError {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": format!(".{}", p.join("."))}))
        .collect();
    let listed: Vec<String> =
        conflicts.iter().map(|(m, p)| format!("conflict with \"{m}\": .{}", p.join("."))).collect();
    let plural = if conflicts.len() == 1 { "conflict" } else { "conflicts" };
    let message = format!("Apply failed with {} {plural}: {}", conflicts.len(), listed.join("\n"));
    let mut err = ApiError::conflict(rt, name);
    err.message = message;
    if let Some(details) = err.details.as_mut() {
        details["causes"] = json!(causes);
    }
    err
}

/// The Apply managers recorded on an object and the fields each owns.
fn managers(obj: &Value) -> Vec<(String, BTreeSet<Path>)> {
    let entries = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["operation"] == "Apply")
        .map(|e| {
            let mut paths = BTreeSet::new();
            decode(&e["fieldsV1"], Vec::new(), &mut paths);
            (e["manager"].as_str().unwrap_or_default().to_owned(), paths)
        })
        .collect()
}

fn set_managers(obj: &mut Value, managers: Vec<(String, BTreeSet<Path>)>, rt: &ResourceType) {
    let others: Vec<Value> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|e| e["operation"] != "Apply").cloned().collect())
        .unwrap_or_default();
    let mut entries = others;
    for (manager, paths) in managers {
        entries.push(json!({
            "manager": manager,
            "operation": "Apply",
            "apiVersion": rt.api_version(),
            "time": meta::now(),
            "fieldsType": "FieldsV1",
            "fieldsV1": encode(&paths),
        }));
    }
    meta::metadata_mut(obj).insert("managedFields".into(), Value::Array(entries));
}

fn encode(paths: &BTreeSet<Path>) -> Value {
    let mut root = Value::Object(Map::new());
    for path in paths {
        let mut node = &mut root;
        for part in path {
            node = node
                .as_object_mut()
                .expect("fieldsV1 nodes are objects")
                .entry(format!("f:{part}"))
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    root
}

fn decode(node: &Value, at: Path, paths: &mut BTreeSet<Path>) {
    let Some(map) = node.as_object() else { return };
    let children: Vec<(&String, &Value)> =
        map.iter().filter(|(k, _)| k.starts_with("f:")).collect();
    if children.is_empty() && !at.is_empty() {
        paths.insert(at);
        return;
    }
    for (key, child) in children {
        let mut path = at.clone();
        path.push(key[2..].to_owned());
        decode(child, path, paths);
    }
}

fn get_path<'a>(obj: &'a Value, path: &Path) -> Option<&'a Value> {
    path.iter().try_fold(obj, |node, part| node.get(part))
}

fn set_path(obj: &mut Value, path: &Path, value: Value) {
    let mut node = obj;
    for part in &path[..path.len() - 1] {
        if !node.get(part).is_some_and(Value::is_object) {
            node[part.as_str()] = Value::Object(Map::new());
        }
        node = node.get_mut(part).expect("made above");
    }
    node[path[path.len() - 1].as_str()] = value;
}

fn remove_path(obj: &mut Value, path: &Path) {
    let parent = path[..path.len() - 1].iter().try_fold(&mut *obj, |node, part| node.get_mut(part));
    if let Some(map) = parent.and_then(Value::as_object_mut) {
        map.remove(&path[path.len() - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn reapply_drops_what_the_manager_stopped_applying_and_keeps_the_rest() {
        let rt = resources::deployments();
        let first = json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 2, "paused": false}});
        let mut obj = apply(rt, None, first, "ramen", false).unwrap();
        obj["spec"]["minReadySeconds"] = json!(5); // written by someone who does not apply
        let second =
            json!({"metadata": {"name": "d", "labels": {"b": "2"}}, "spec": {"replicas": 3}});
        let obj = apply(rt, Some(&obj), second, "ramen", false).unwrap();
        assert_eq!(obj["spec"], json!({"replicas": 3, "minReadySeconds": 5}));
        assert_eq!(obj["metadata"]["labels"], json!({"b": "2"}));
    }

    #[test]
    fn another_appliers_field_conflicts_unless_forced() {
        let rt = resources::configmaps_for_tests();
        let obj =
            apply(rt, None, json!({"metadata": {"name": "c"}, "data": {"k": "1"}}), "one", false)
                .unwrap();
        let err = apply(
            rt,
            Some(&obj),
            json!({"metadata": {"name": "c"}, "data": {"k": "2"}}),
            "two",
            false,
        )
        .unwrap_err();
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert!(err.message.contains("conflict with \"one\": .data.k"), "{}", err.message);
        let obj = apply(
            rt,
            Some(&obj),
            json!({"metadata": {"name": "c"}, "data": {"k": "2"}}),
            "two",
            true,
        )
        .unwrap();
        assert_eq!(obj["data"]["k"], "2");
        assert_eq!(managers(&obj).iter().filter(|(_, p)| !p.is_empty()).count(), 1);
    }
}
