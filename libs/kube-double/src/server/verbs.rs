//! The verbs on a resource: get, list (selectors, paging), create, replace, patch (JSON,
//! merge, strategic, server-side apply), delete and deletecollection.

use axum::response::Response;
use base64::Engine;
use serde_json::{Value, json};

use super::routes::Target;
use super::{Call, Shared, json as reply};
use crate::apply;
use crate::errors::ApiError;
use crate::patch::{self, PatchType};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{DeleteOptions, Deleted, Propagation, Write, meta};

pub(crate) fn get(shared: &Shared, target: &Target) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    let obj = shared
        .store
        .get(target.rt, target.ns(), name)
        .ok_or_else(|| ApiError::not_found(target.rt, name))?;
    Ok(reply(200, &obj))
}

/// The objects of a list or watch request that match its selectors.
pub(crate) struct Filter {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    pub fn from_call(call: &Call) -> Result<Self, ApiError> {
        Ok(Self {
            labels: LabelSelector::parse(call.param("labelSelector").unwrap_or_default())?,
            fields: FieldSelector::parse(call.param("fieldSelector").unwrap_or_default())?,
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(&meta::labels(obj)) && self.fields.matches(obj)
    }
}

/// A continue token: where the next page starts. Simplification: later pages read the
/// current state rather than a snapshot at the first page's resourceVersion.
fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = || ApiError::bad_request("continue key is not valid: illegal base64 data");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let value: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = value["rv"].as_u64().ok_or_else(bad)?;
    Ok((rv, value["start"].as_str().unwrap_or_default().to_owned()))
}

fn encode_continue(rv: u64, after: &str) -> String {
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": after}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn list_key(obj: &Value) -> String {
    format!("{}/{}", meta::namespace(obj), meta::name(obj))
}

pub(crate) fn list(shared: &Shared, target: &Target, call: &Call) -> Result<Response, ApiError> {
    let filter = Filter::from_call(call)?;
    let (items, list_rv) = shared.store.list(target.rt, target.namespace.as_deref());
    let mut items: Vec<Value> = items.into_iter().filter(|o| filter.matches(o)).collect();
    let mut rv = list_rv;
    if let Some(token) = call.param("continue") {
        let (token_rv, after) = decode_continue(token)?;
        if token_rv < shared.store.compacted() {
            return Err(ApiError::gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            ));
        }
        items.retain(|o| list_key(o) > after);
        rv = token_rv;
    }
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    let limit = call.param("limit").and_then(|l| l.parse::<usize>().ok()).filter(|l| *l > 0);
    if let Some(limit) = limit
        && items.len() > limit
    {
        let remaining = items.len() - limit;
        items.truncate(limit);
        let last = items.last().map(list_key).unwrap_or_default();
        metadata["continue"] = json!(encode_continue(rv, &last));
        metadata["remainingItemCount"] = json!(remaining);
    }
    for item in &mut items {
        // Items of a list carry no type meta, as the apiserver sends them.
        if let Some(map) = item.as_object_mut() {
            map.remove("kind");
            map.remove("apiVersion");
        }
    }
    let list = json!({
        "kind": target.rt.list_kind(),
        "apiVersion": target.rt.api_version(),
        "metadata": metadata,
        "items": items,
    });
    Ok(reply(200, &list))
}

pub(crate) fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body of the request is not valid JSON: {e}"))
    })
}

pub(crate) fn create(shared: &Shared, target: &Target, call: &Call) -> Result<Response, ApiError> {
    let obj = parse_json(&call.body)?;
    let created = shared.store.create(target.rt, target.ns(), obj)?;
    Ok(reply(201, &created))
}

pub(crate) fn replace(shared: &Shared, target: &Target, call: &Call) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    let obj = parse_json(&call.body)?;
    let updated = shared.store.update(target.rt, target.ns(), name, obj, Write::Main)?;
    Ok(reply(200, &updated))
}

pub(crate) fn patch(shared: &Shared, target: &Target, call: &Call) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    let kind = PatchType::from_content_type(&call.content_type)?;
    let current = shared.store.get(target.rt, target.ns(), name);
    if kind == PatchType::Apply {
        let manager = call.param("fieldManager").ok_or_else(|| {
            ApiError::bad_request("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
        })?;
        let applied = apply::parse_body(&call.body)?;
        let obj = apply::apply(target.rt, current.as_ref(), applied, manager, call.flag("force"))?;
        return match current {
            None => Ok(reply(201, &shared.store.create(target.rt, target.ns(), obj)?)),
            Some(_) => Ok(reply(
                200,
                &shared.store.update(target.rt, target.ns(), name, obj, Write::Main)?,
            )),
        };
    }
    let mut doc = current.ok_or_else(|| ApiError::not_found(target.rt, name))?;
    patch::apply_patch(kind, &mut doc, &call.body)?;
    let updated = shared.store.update(target.rt, target.ns(), name, doc, Write::Main)?;
    Ok(reply(200, &updated))
}

/// `DeleteOptions` from the body (kube sends them there) and the query.
pub(crate) fn delete_options(call: &Call) -> Result<DeleteOptions, ApiError> {
    let body: Value = if call.body.is_empty() { json!({}) } else { parse_json(&call.body)? };
    let propagation = match body["propagationPolicy"].as_str().or(call.param("propagationPolicy")) {
        Some(text) => Some(Propagation::parse(text)?),
        None if body["orphanDependents"] == true || call.flag("orphanDependents") => {
            Some(Propagation::Orphan)
        }
        None => None,
    };
    Ok(DeleteOptions {
        propagation,
        precondition_uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        precondition_rv: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

pub(crate) fn delete(shared: &Shared, target: &Target, call: &Call) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    let opts = delete_options(call)?;
    match shared.store.delete(target.rt, target.ns(), name, &opts)? {
        Deleted::Pending(obj) => Ok(reply(200, &obj)),
        Deleted::Gone(obj) if target.rt.return_deleted_object => Ok(reply(200, &obj)),
        Deleted::Gone(obj) => {
            let mut details =
                json!({"name": name, "kind": target.rt.plural, "uid": meta::uid(&obj)});
            if !target.rt.group.is_empty() {
                details["group"] = json!(target.rt.group);
            }
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
            Ok(reply(200, &status))
        }
    }
}

pub(crate) fn delete_collection(
    shared: &Shared,
    target: &Target,
    call: &Call,
) -> Result<Response, ApiError> {
    let filter = Filter::from_call(call)?;
    let opts = delete_options(call)?;
    let (items, _) = shared.store.list(target.rt, target.namespace.as_deref());
    let mut deleted = Vec::new();
    for obj in items.iter().filter(|o| filter.matches(o)) {
        match shared.store.delete(target.rt, meta::namespace(obj), meta::name(obj), &opts) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => deleted.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": target.rt.list_kind(),
        "apiVersion": target.rt.api_version(),
        "metadata": {"resourceVersion": shared.store.current_rv().to_string()},
        "items": deleted,
    });
    Ok(reply(200, &list))
}
