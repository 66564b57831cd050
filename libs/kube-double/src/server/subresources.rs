//! Subresources: `/status` (only status changes), `/scale` (an autoscaling/v1 `Scale` over
//! `spec.replicas`), `pods/{name}/log`, and `namespaces/{name}/finalize`.
//!
//! Simplification: `log?follow=true` answers the log so far and ends; `sinceSeconds`,
//! `sinceTime` and `timestamps` are ignored.

use axum::response::{IntoResponse, Response};
use http::Method;
use serde_json::{Value, json};

use super::routes::Target;
use super::verbs::parse_json;
use super::{Call, Shared, json as reply};
use crate::errors::ApiError;
use crate::patch::{self, PatchType};
use crate::selectors::LabelSelector;
use crate::store::{Write, meta};

pub(crate) fn handle(
    shared: &Shared,
    target: &Target,
    sub: &str,
    call: &Call,
) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    let rt = target.rt;
    let ns = target.ns();
    let current = || shared.store.get(rt, ns, name).ok_or_else(|| ApiError::not_found(rt, name));
    match (sub, &call.method) {
        ("status", &Method::GET) if rt.status_subresource => Ok(reply(200, &current()?)),
        ("status", &Method::PUT) if rt.status_subresource => {
            let obj = parse_json(&call.body)?;
            Ok(reply(200, &shared.store.update(rt, ns, name, obj, Write::Status)?))
        }
        ("status", &Method::PATCH) if rt.status_subresource => {
            let mut doc = current()?;
            patch_doc(call, &mut doc)?;
            Ok(reply(200, &shared.store.update(rt, ns, name, doc, Write::Status)?))
        }
        ("scale", &Method::GET) if rt.scale_subresource => Ok(reply(200, &scale_of(&current()?))),
        ("scale", &Method::PUT | &Method::PATCH) if rt.scale_subresource => {
            let obj = current()?;
            let mut scale = scale_of(&obj);
            if call.method == Method::PUT {
                scale = parse_json(&call.body)?;
            } else {
                patch_doc(call, &mut scale)?;
            }
            let sent_rv = meta::resource_version(&scale);
            if !sent_rv.is_empty() && sent_rv != meta::resource_version(&obj) {
                return Err(ApiError::conflict(rt, name));
            }
            let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
            let updated =
                shared.store.mutate(rt, ns, name, |o| o["spec"]["replicas"] = json!(replicas))?;
            Ok(reply(200, &scale_of(&updated)))
        }
        ("log", &Method::GET) if rt.plural == "pods" => log(shared, ns, &current()?, call),
        ("finalize", &Method::PUT) if rt.plural == "namespaces" => {
            let body = parse_json(&call.body)?;
            let finalizers = body.pointer("/spec/finalizers").cloned().unwrap_or(json!([]));
            let updated =
                shared.store.mutate(rt, ns, name, |o| o["spec"]["finalizers"] = finalizers)?;
            Ok(reply(200, &updated))
        }
        _ => {
            Err(ApiError::new(404, "NotFound", "the server could not find the requested resource"))
        }
    }
}

fn patch_doc(call: &Call, doc: &mut Value) -> Result<(), ApiError> {
    let kind = PatchType::from_content_type(&call.content_type)?;
    if kind == PatchType::Apply {
        // An apply of a subresource sets what it names, like a merge patch (simplified).
        let applied = crate::apply::parse_body(&call.body)?;
        json_patch::merge(doc, &applied);
        return Ok(());
    }
    patch::apply_patch(kind, doc, &call.body)
}

/// The `Scale` of a Deployment or ReplicaSet.
fn scale_of(obj: &Value) -> Value {
    let selector =
        obj.pointer("/spec/selector").map(LabelSelector::from_structured).unwrap_or_default();
    let m = &obj["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"],
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector.to_text(),
        },
    })
}

fn log(shared: &Shared, ns: &str, pod: &Value, call: &Call) -> Result<Response, ApiError> {
    let pod_name = meta::name(pod);
    let names: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let container = match call.param("container") {
        Some(c) if names.iter().any(|n| n == c) => c.to_owned(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {pod_name}"
            )));
        }
        None if names.len() == 1 => names[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                names.join(" ")
            )));
        }
    };
    let previous = call.flag("previous");
    if !previous && let Some(reason) = waiting_to_start(pod, &container) {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {reason}"
        )));
    }
    let lines = shared.logs.read(ns, pod_name, &container, previous).ok_or_else(|| {
        ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
        ))
    })?;
    let tail = call.param("tailLines").and_then(|t| t.parse::<usize>().ok()).unwrap_or(usize::MAX);
    let mut text: String =
        lines[lines.len().saturating_sub(tail)..].iter().map(|l| format!("{l}\n")).collect();
    if let Some(limit) = call.param("limitBytes").and_then(|l| l.parse::<usize>().ok()) {
        text.truncate(limit);
    }
    Ok(([(http::header::CONTENT_TYPE, "text/plain")], text).into_response())
}

/// Why a container has no log yet (never started), as the kubelet words it.
fn waiting_to_start(pod: &Value, container: &str) -> Option<String> {
    let statuses = pod.pointer("/status/containerStatuses").and_then(Value::as_array);
    let status = statuses.and_then(|s| s.iter().find(|c| c["name"] == container));
    let Some(status) = status else { return Some("ContainerCreating".to_owned()) };
    let started = status["restartCount"].as_i64().unwrap_or(0) > 0
        || status.pointer("/state/running").is_some()
        || status.pointer("/state/terminated").is_some();
    if started {
        return None;
    }
    let reason = status
        .pointer("/state/waiting/reason")
        .and_then(Value::as_str)
        .unwrap_or("ContainerCreating");
    Some(match reason {
        "ImagePullBackOff" | "ErrImagePull" => "trying and failing to pull image".to_owned(),
        other => other.to_owned(),
    })
}
