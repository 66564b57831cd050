//! Discovery, enough for a client to find the served groups and resources and for
//! `Client::apiserver_version()`: `/version`, `/api`, `/apis`, `/apis/{group}` and each
//! group version's `APIResourceList`.

use axum::response::Response;
use serde_json::{Value, json};

use super::json;
use crate::resources::{RESOURCES, ResourceType};

/// The Kubernetes version the double plays: the oldest ramen supports (k8s-openapi `v1_33`).
pub const MINOR: &str = "33";

pub(crate) fn version() -> Response {
    json(
        200,
        &json!({
            "major": "1",
            "minor": MINOR,
            "emulationMajor": "1",
            "emulationMinor": MINOR,
            "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "32",
            "gitVersion": format!("v1.{MINOR}.0-kube-double"),
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-04-23T00:00:00Z",
            "goVersion": "go1.24.2",
            "compiler": "gc",
            "platform": "linux/amd64",
        }),
    )
}

pub(crate) fn api_versions(address: &str) -> Response {
    json(
        200,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }),
    )
}

fn groups() -> Vec<&'static str> {
    let mut groups: Vec<&'static str> =
        RESOURCES.iter().map(|r| r.group).filter(|g| !g.is_empty()).collect();
    groups.dedup();
    groups
}

fn group_json(group: &str) -> Value {
    let versions: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group)
        .map(|r| json!({"groupVersion": r.api_version(), "version": r.version}))
        .fold(Vec::new(), |mut acc, v| {
            if !acc.contains(&v) {
                acc.push(v);
            }
            acc
        });
    json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
}

pub(crate) fn group_list() -> Response {
    let groups: Vec<Value> = groups().into_iter().map(group_json).collect();
    json(200, &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

pub(crate) fn group(group: &str) -> Option<Response> {
    groups().contains(&group).then(|| {
        let mut body = group_json(group);
        body["kind"] = json!("APIGroup");
        body["apiVersion"] = json!("v1");
        json(200, &body)
    })
}

fn resource_entries(rt: &ResourceType) -> Vec<Value> {
    let verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
    let mut entries = vec![json!({
        "name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
        "kind": rt.kind, "verbs": verbs, "shortNames": rt.short_names,
    })];
    if rt.status_subresource {
        entries.push(json!({"name": format!("{}/status", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind, "verbs": ["get", "patch", "update"]}));
    }
    if rt.scale_subresource {
        entries.push(json!({"name": format!("{}/scale", rt.plural), "singularName": "", "namespaced": rt.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
    }
    if rt.plural == "pods" {
        entries.push(json!({"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]}));
    }
    entries
}

pub(crate) fn resource_list(group: &str, version: &str) -> Option<Response> {
    let types: Vec<&ResourceType> =
        RESOURCES.iter().filter(|r| r.group == group && r.version == version).collect();
    let first = types.first()?;
    let resources: Vec<Value> = types.iter().flat_map(|rt| resource_entries(rt)).collect();
    Some(json(
        200,
        &json!({
            "kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": first.api_version(), "resources": resources,
        }),
    ))
}
