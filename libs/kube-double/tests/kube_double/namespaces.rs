//! Namespace deletion: Terminating while a finalizer holds it, conditions naming what is
//! left, 403 for new content, gone once released; owner references and orphaning.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::common::{api_error, eventually, from_json, namespace, start};

fn condition(ns: &Namespace, kind: &str) -> Option<(String, String)> {
    let c = ns.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)?;
    Some((c.status.clone(), c.message.clone().unwrap_or_default()))
}

#[tokio::test]
async fn a_held_namespace_stays_terminating_until_released() {
    let (double, client) = start().await;
    namespace(&client, "zone-b").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "zone-b");
    cms.create(&PostParams::default(), &from_json(json!({"metadata": {"name": "plain"}})))
        .await
        .unwrap();
    cms.create(
        &PostParams::default(),
        &from_json(json!({"metadata": {"name": "kept", "finalizers": ["example.com/cleanup"]}})),
    )
    .await
    .unwrap();
    double.hold_namespace("zone-b").unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let deleted = namespaces.delete("zone-b", &DeleteParams::default()).await.unwrap();
    let ns = deleted.left().expect("the namespace is still there");
    assert_eq!(ns.status.as_ref().unwrap().phase.as_deref(), Some("Terminating"));
    assert!(ns.metadata.deletion_timestamp.is_some());

    let ns = namespaces.get("zone-b").await.unwrap();
    let (status, message) = condition(&ns, "NamespaceContentRemaining").unwrap();
    assert_eq!(status, "True");
    assert_eq!(message, "Some resources are remaining: configmaps has 1 resource instances");
    let (status, message) = condition(&ns, "NamespaceFinalizersRemaining").unwrap();
    assert_eq!(
        (status.as_str(), message.as_str()),
        (
            "True",
            "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"
        )
    );
    assert!(cms.get_opt("plain").await.unwrap().is_none());
    let kept = cms.get("kept").await.unwrap();
    assert!(kept.metadata.deletion_timestamp.is_some());

    let (code, reason, message) = api_error(
        cms.create(&PostParams::default(), &from_json(json!({"metadata": {"name": "late"}}))).await,
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace zone-b because it is being terminated"
    );

    cms.patch(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(
        cms.get_opt("kept").await.unwrap().is_none(),
        "a terminating object goes once its finalizers do"
    );
    let ns = namespaces.get("zone-b").await.unwrap();
    assert_eq!(condition(&ns, "NamespaceContentRemaining").unwrap().0, "False");
    assert_eq!(ns.finalizers(), [ramen_kube_double::HOLD_FINALIZER]);

    double.release_namespace("zone-b").unwrap();
    eventually("the namespace is gone", || async {
        match namespaces.get_opt("zone-b").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

#[tokio::test]
async fn dependents_go_with_their_owner_unless_orphaned() {
    let (_double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = cms
        .create(&PostParams::default(), &from_json(json!({"metadata": {"name": "owner"}})))
        .await
        .unwrap();
    let owner_ref = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.uid().unwrap()}]);
    for name in ["dep-1", "dep-2"] {
        cms.create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": name, "ownerReferences": owner_ref}})),
        )
        .await
        .unwrap();
    }
    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let (code, ..) = api_error(cms.delete("owner", &stale).await);
    assert_eq!(code, 409);
    cms.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let orphan = cms.get("dep-1").await.unwrap();
    assert!(orphan.owner_references().is_empty());

    let second = cms
        .create(&PostParams::default(), &from_json(json!({"metadata": {"name": "owner"}})))
        .await
        .unwrap();
    let owner_ref = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": second.uid().unwrap()}]);
    cms.patch(
        "dep-2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": owner_ref}})),
    )
    .await
    .unwrap();
    cms.delete("owner", &DeleteParams::foreground()).await.unwrap();
    assert!(cms.get_opt("dep-2").await.unwrap().is_none());
    assert!(cms.get_opt("dep-1").await.unwrap().is_some());
}
