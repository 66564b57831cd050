//! Request paths to resources: `/api/v1/...` and `/apis/{group}/{version}/...`, namespaced
//! (`namespaces/{ns}/{plural}[/{name}[/{subresource}]]`) or cluster-wide
//! (`{plural}[/{name}[/{subresource}]]`), and the verb the method and query select.

use axum::response::Response;
use http::Method;

use super::{Call, Shared, discovery, subresources, verbs, watch};
use crate::errors::ApiError;
use crate::resources::{self, ResourceType};

/// Where a resource request points.
pub(crate) struct Target {
    pub rt: &'static ResourceType,
    /// The namespace in the path (`None`: all namespaces, or a cluster-scoped type).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    /// The namespace to store under ("" for cluster-scoped types).
    pub fn ns(&self) -> &str {
        if self.rt.namespaced { self.namespace.as_deref().unwrap_or_default() } else { "" }
    }
}

fn not_found() -> ApiError {
    ApiError::new(404, "NotFound", "the server could not find the requested resource")
}

pub(crate) async fn dispatch(shared: &Shared, call: Call) -> Result<Response, ApiError> {
    let segments: Vec<String> = call.path.trim_matches('/').split('/').map(str::to_owned).collect();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["version"] => return Ok(discovery::version()),
        ["api"] => return Ok(discovery::api_versions(&shared.address.lock())),
        ["apis"] => return Ok(discovery::group_list()),
        ["api", "v1"] => return discovery::resource_list("", "v1").ok_or_else(not_found),
        ["apis", group] => return discovery::group(group).ok_or_else(not_found),
        ["apis", group, version] => {
            return discovery::resource_list(group, version).ok_or_else(not_found);
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let target = parse_target(group, version, rest).ok_or_else(not_found)?;
    if target.rt.namespaced && target.namespace.is_none() && call.method != Method::GET {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    if matches!(call.method, Method::PUT | Method::PATCH)
        && let Some(name) = &target.name
        && shared.faults.lock().take_conflict(target.rt.kind, target.ns(), name)
    {
        return Err(ApiError::conflict(target.rt, name));
    }
    match (&call.method, target.name.is_some(), target.subresource.as_deref()) {
        (&Method::GET, false, None) if call.flag("watch") => {
            Ok(watch::watch(shared, &target, &call))
        }
        (&Method::GET, false, None) => verbs::list(shared, &target, &call),
        (&Method::POST, false, None) => verbs::create(shared, &target, &call),
        (&Method::DELETE, false, None) => verbs::delete_collection(shared, &target, &call),
        (&Method::GET, true, None) => verbs::get(shared, &target),
        (&Method::PUT, true, None) => verbs::replace(shared, &target, &call),
        (&Method::PATCH, true, None) => verbs::patch(shared, &target, &call),
        (&Method::DELETE, true, None) => verbs::delete(shared, &target, &call),
        (_, true, Some(sub)) => subresources::handle(shared, &target, sub, &call),
        _ => Err(ApiError::method_not_supported(target.rt, call.method.as_str())),
    }
}

fn parse_target(group: &str, version: &str, rest: &[&str]) -> Option<Target> {
    let owned = |s: &&str| (*s).to_owned();
    // `namespaces/{ns}/{plural}...` names a namespaced resource unless the third segment is a
    // namespace subresource (`namespaces/{name}/status`).
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(rt) = resources::by_path(group, version, plural).filter(|r| r.namespaced)
    {
        return match tail {
            [] => Some(Target { rt, namespace: Some(owned(ns)), name: None, subresource: None }),
            [name] => Some(Target {
                rt,
                namespace: Some(owned(ns)),
                name: Some(owned(name)),
                subresource: None,
            }),
            [name, sub] => Some(Target {
                rt,
                namespace: Some(owned(ns)),
                name: Some(owned(name)),
                subresource: Some(owned(sub)),
            }),
            _ => None,
        };
    }
    let (plural, tail) = rest.split_first()?;
    let rt = resources::by_path(group, version, plural)?;
    match tail {
        [] => Some(Target { rt, namespace: None, name: None, subresource: None }),
        [name] if !rt.namespaced => {
            Some(Target { rt, namespace: None, name: Some(owned(name)), subresource: None })
        }
        [name, sub] if !rt.namespaced => Some(Target {
            rt,
            namespace: None,
            name: Some(owned(name)),
            subresource: Some(owned(sub)),
        }),
        _ => None,
    }
}
