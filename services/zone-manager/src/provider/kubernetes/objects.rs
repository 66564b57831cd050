//! Reading and writing objects: server-side apply under one field manager (so applying the
//! same object again is a no-op, and a field another manager owns is taken back), deletes that
//! treat "already gone" as done, and the ownership check that keeps ramen off objects it did
//! not make.

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::clusters::{api_error, is_not_found};
use super::manifests::{FIELD_MANAGER, GROUP_LABEL, MANAGED_BY, MANAGER, Target, ZONE_LABEL};
use crate::provider::ProviderError;

pub trait Object:
    Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
}
impl<K> Object for K where
    K: Resource<DynamicType = ()>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

pub fn namespaced<K>(client: &kube::Client, namespace: &str) -> Api<K>
where
    K: Object + Resource<Scope = NamespaceResourceScope>,
{
    Api::namespaced(client.clone(), namespace)
}

fn describe<K: Object>(name: &str) -> String {
    format!("{} {name}", K::kind(&()))
}

pub async fn apply<K: Object>(api: &Api<K>, object: &K) -> Result<K, ProviderError> {
    let name = object.name_any();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(object))
        .await
        .map_err(|e| api_error(&format!("applying {}", describe::<K>(&name)), e))
}

pub async fn create<K: Object>(api: &Api<K>, object: &K) -> Result<K, ProviderError> {
    let name = object.name_any();
    api.create(
        &PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() },
        object,
    )
    .await
    .map_err(|e| api_error(&format!("creating {}", describe::<K>(&name)), e))
}

pub async fn get<K: Object>(api: &Api<K>, name: &str) -> Result<Option<K>, ProviderError> {
    api.get_opt(name).await.map_err(|e| api_error(&format!("reading {}", describe::<K>(name)), e))
}

pub async fn list<K: Object>(api: &Api<K>, selector: &str) -> Result<Vec<K>, ProviderError> {
    let params = ListParams::default().labels(selector);
    api.list(&params)
        .await
        .map(|list| list.items)
        .map_err(|e| api_error(&format!("listing {}s ({selector})", K::kind(&())), e))
}

/// Deletes `name` (its dependents in the background); true when it was there.
pub async fn delete<K: Object>(api: &Api<K>, name: &str) -> Result<bool, ProviderError> {
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(err) if is_not_found(&err) => Ok(false),
        Err(err) => Err(api_error(&format!("deleting {}", describe::<K>(name)), err)),
    }
}

/// Whether `object` carries this placement's labels (ramen made it for this group and zone).
pub fn is_ours<K: Resource>(object: &K, target: &Target) -> bool {
    let labels = object.meta().labels.as_ref();
    let has = |key: &str, value: &str| labels.and_then(|l| l.get(key)).is_some_and(|v| v == value);
    has(MANAGED_BY, MANAGER) && has(GROUP_LABEL, target.group) && has(ZONE_LABEL, target.zone)
}

/// Deletes `name` only when ramen made it for this placement; something else by that name is
/// left alone and named.
pub async fn delete_ours<K: Object>(
    api: &Api<K>,
    name: &str,
    target: &Target<'_>,
) -> Result<DeleteOutcome, ProviderError> {
    match get(api, name).await? {
        None => Ok(DeleteOutcome::Absent),
        Some(found) if !is_ours(&found, target) => Ok(DeleteOutcome::NotOurs),
        Some(_) => Ok(if delete(api, name).await? {
            DeleteOutcome::Deleted
        } else {
            DeleteOutcome::Absent
        }),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    Deleted,
    Absent,
    NotOurs,
}
