//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386), and strategic merge
//! patch. Server-side apply lives in `apply.rs`.
//!
//! Simplification: the strategic merge patch knows the merge keys of the lists ramen's
//! manifests use (containers, init containers, volumes, env, volume mounts, ports,
//! image pull secrets, conditions, owner references, host aliases, topology spread
//! constraints) and merges `metadata.finalizers` as a set; every other list is replaced, as
//! in a merge patch. `$patch: delete` on a keyed element removes it; `$setElementOrder`,
//! `$retainKeys` and `$deleteFromPrimitiveList` directives are ignored.

use serde_json::{Map, Value};

use crate::errors::ApiError;

/// The patch types PATCH accepts, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Applies a JSON, merge or strategic patch to `doc`.
pub fn apply_patch(kind: PatchType, doc: &mut Value, body: &[u8]) -> Result<(), ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match kind {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch).map_err(|e| {
                ApiError::bad_request(format!(
                    "the server rejected our request due to an error in our request: {e}"
                ))
            })?;
            json_patch::patch(doc, &ops.0).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })
        }
        PatchType::Merge => {
            json_patch::merge(doc, &patch);
            Ok(())
        }
        PatchType::Strategic => {
            strategic_merge(doc, &patch, "");
            Ok(())
        }
        PatchType::Apply => {
            Err(ApiError::bad_request("apply patches are handled by server-side apply"))
        }
    }
}

/// The merge key of a list field, by field name (and, for `ports`, by what the items carry).
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" if items.iter().any(|i| i.get("containerPort").is_some()) => "containerPort",
        "ports" => "port",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        _ => return None,
    })
}

fn strategic_merge(doc: &mut Value, patch: &Value, path: &str) {
    let Some(patch_map) = patch.as_object() else {
        *doc = patch.clone();
        return;
    };
    if patch_map.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replacement = patch.clone();
        replacement.as_object_mut().map(|m| m.remove("$patch"));
        *doc = replacement;
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let target = doc.as_object_mut().expect("made an object above");
    for (key, value) in patch_map {
        if key.starts_with('$') {
            continue;
        }
        let child = format!("{path}/{key}");
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Array(items) if child == "/metadata/finalizers" => {
                let existing =
                    target.entry(key.clone()).or_insert_with(|| Value::Array(Vec::new()));
                if let Some(list) = existing.as_array_mut() {
                    for item in items {
                        if !list.contains(item) {
                            list.push(item.clone());
                        }
                    }
                }
            }
            Value::Array(items) => match merge_key(key, items) {
                Some(merge_key) => {
                    let existing =
                        target.entry(key.clone()).or_insert_with(|| Value::Array(Vec::new()));
                    merge_list(existing, items, merge_key, &child);
                }
                None => {
                    target.insert(key.clone(), value.clone());
                }
            },
            Value::Object(_) => {
                let existing = target.entry(key.clone()).or_insert(Value::Null);
                strategic_merge(existing, value, &child);
            }
            other => {
                target.insert(key.clone(), other.clone());
            }
        }
    }
}

/// Merges patch items into a keyed list: matching items are merged, new ones appended,
/// `$patch: delete` items removed.
fn merge_list(existing: &mut Value, items: &[Value], key: &str, path: &str) {
    if !existing.is_array() {
        *existing = Value::Array(Vec::new());
    }
    let list = existing.as_array_mut().expect("made an array above");
    for item in items {
        let id = item.get(key);
        let position = id.and_then(|id| list.iter().position(|e| e.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                list.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_merge(&mut list[i], item, path),
            (None, false) => {
                let mut fresh = Value::Null;
                strategic_merge(&mut fresh, item, path);
                list.push(fresh);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_merges_containers_by_name_and_replaces_other_lists() {
        let mut doc = json!({"spec": {"containers": [
            {"name": "app", "image": "a:1", "args": ["x"]},
            {"name": "side", "image": "s:1"}
        ]}});
        let patch = json!({"spec": {"containers": [
            {"name": "app", "image": "a:2", "args": ["y"]},
            {"name": "side", "$patch": "delete"},
            {"name": "new", "image": "n:1"}
        ]}});
        apply_patch(PatchType::Strategic, &mut doc, patch.to_string().as_bytes()).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"containers": [
                {"name": "app", "image": "a:2", "args": ["y"]},
                {"name": "new", "image": "n:1"}
            ]}})
        );
    }

    #[test]
    fn json_and_merge_patches() {
        let mut doc = json!({"a": {"b": 1, "c": 2}});
        apply_patch(PatchType::Merge, &mut doc, br#"{"a": {"b": null, "d": 3}}"#).unwrap();
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}}));
        apply_patch(
            PatchType::Json,
            &mut doc,
            br#"[{"op": "replace", "path": "/a/c", "value": 5}]"#,
        )
        .unwrap();
        assert_eq!(doc["a"]["c"], 5);
        let bad = apply_patch(PatchType::Json, &mut doc, br#"[{"op": "remove", "path": "/nope"}]"#);
        assert_eq!(bad.unwrap_err().code, 422);
    }
}
