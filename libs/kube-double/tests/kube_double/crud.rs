//! CRUD with typed APIs, errors as `Status`, patches, SSA, selectors, paging, kubeconfig.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::common::{api_error, from_json, namespace, start};

#[tokio::test]
async fn version_discovery_and_a_kubeconfig_file() {
    let (double, client) = start().await;
    let version = client.apiserver_version().await.unwrap();
    assert_eq!((version.major.as_str(), version.minor.as_str()), ("1", "33"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    double.write_kubeconfig(&path, "zone-a").unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let options =
        kube::config::KubeConfigOptions { context: Some("zone-a".into()), ..Default::default() };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    let from_file = Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(from_file);
    assert!(namespaces.get("default").await.is_ok());
}

#[tokio::test]
async fn requests_without_the_token_get_401() {
    let (double, _) = start().await;
    let text = double.kubeconfig("x").replace(double.token(), "wrong");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    let api: Api<Namespace> = Api::all(Client::try_from(config).unwrap());
    let (code, reason, _) = api_error(api.get("default").await);
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn typed_crud_and_the_errors_of_the_apiserver() {
    let (double, client) = start().await;
    namespace(&client, "zone").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "zone");
    let secret: Secret =
        from_json(json!({"metadata": {"name": "creds"}, "stringData": {"token": "s3cret"}}));
    let created = secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(created.data.unwrap()["token"].0, b"s3cret");
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(created.type_.as_deref(), Some("Opaque"));

    let (code, reason, message) = api_error(secrets.create(&PostParams::default(), &secret).await);
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(message, "secrets \"creds\" already exists");
    let (code, reason, message) = api_error(secrets.get("missing").await);
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (404, "NotFound", "secrets \"missing\" not found")
    );
    assert!(secrets.get_opt("missing").await.unwrap().is_none());

    let bad: ConfigMap = from_json(json!({"metadata": {"name": "Not_A_Name"}}));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "zone");
    let (code, reason, message) = api_error(cms.create(&PostParams::default(), &bad).await);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with("ConfigMap \"Not_A_Name\" is invalid: metadata.name: Invalid value"),
        "{message}"
    );

    let generated: ConfigMap =
        from_json(json!({"metadata": {"generateName": "cfg-"}, "data": {"a": "1"}}));
    let generated = cms.create(&PostParams::default(), &generated).await.unwrap();
    assert!(generated.name_any().starts_with("cfg-") && generated.name_any().len() == 9);

    let (code, _, message) = api_error(
        Api::<ConfigMap>::namespaced(client.clone(), "nowhere")
            .create(&PostParams::default(), &from_json(json!({"metadata": {"name": "x"}})))
            .await,
    );
    assert_eq!((code, message.as_str()), (404, "namespaces \"nowhere\" not found"));

    secrets.delete("creds", &DeleteParams::default()).await.unwrap();
    let (code, ..) = api_error(secrets.delete("creds", &DeleteParams::default()).await);
    assert_eq!(code, 404);
    assert!(double.get("v1", "Secret", "zone", "creds").is_none());
    assert_eq!(double.list("v1", "ConfigMap", Some("zone")).len(), 1);
}

#[tokio::test]
async fn a_stale_resource_version_conflicts() {
    let (double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap = from_json(json!({"metadata": {"name": "c"}, "data": {"v": "1"}}));
    let first = cms.create(&PostParams::default(), &cm).await.unwrap();
    let mut second = first.clone();
    second.data.as_mut().unwrap().insert("v".into(), "2".into());
    let second = cms.replace("c", &PostParams::default(), &second).await.unwrap();
    assert!(
        second.resource_version().unwrap().parse::<u64>().unwrap()
            > first.resource_version().unwrap().parse::<u64>().unwrap()
    );
    let (code, reason, message) = api_error(cms.replace("c", &PostParams::default(), &first).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(message.contains("the object has been modified"), "{message}");

    double.conflict_next_update("ConfigMap", "default", "c");
    let (code, ..) = api_error(cms.replace("c", &PostParams::default(), &second).await);
    assert_eq!(code, 409);
    cms.replace("c", &PostParams::default(), &second).await.unwrap();
}

#[tokio::test]
async fn merge_strategic_and_json_patches() {
    let (_double, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let d: Deployment = from_json(deployment_json("web", "web:1"));
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let patched = deployments
        .patch("web", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "web:2"}]}}}})))
        .await
        .unwrap();
    let containers =
        patched.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers.clone();
    assert_eq!((containers.len(), containers[0].image.as_deref()), (1, Some("web:2")));
    assert_eq!(
        containers[0].ports.as_ref().map(Vec::len),
        Some(1),
        "strategic merge keeps the other fields"
    );
    assert_eq!(patched.metadata.generation, Some(2));

    let patched = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.labels()["tier"], "front");
    assert_eq!(patched.metadata.generation, Some(2), "metadata changes do not bump the generation");
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]))
            .unwrap();
    let patched =
        deployments.patch("web", &PatchParams::default(), &Patch::Json::<()>(ops)).await.unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(3));
}

pub fn deployment_json(name: &str, image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image, "ports": [{"containerPort": 8080}]}]},
            },
        },
    })
}

#[tokio::test]
async fn server_side_apply_creates_then_updates_and_reports_conflicts() {
    let (double, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let params = PatchParams::apply("ramen");
    let created = deployments
        .patch("api", &params, &Patch::Apply(deployment_json("api", "api:1")))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.metadata.managed_fields.as_ref().unwrap()[0].manager.as_deref(),
        Some("ramen")
    );
    let mut next = deployment_json("api", "api:2");
    next["metadata"]["labels"] = json!({"app": "api", "track": "stable"});
    next["spec"].as_object_mut().unwrap().remove("replicas");
    let updated = deployments.patch("api", &params, &Patch::Apply(next.clone())).await.unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    assert_eq!(updated.labels()["track"], "stable");
    let request = double.requests().into_iter().rev().find(|r| r.method == "PATCH").unwrap();
    assert_eq!(request.content_type.as_deref(), Some("application/apply-patch+yaml"));
    assert_eq!(request.query_param("fieldManager").as_deref(), Some("ramen"));

    let mut other = next.clone();
    other["spec"]["template"]["spec"]["containers"][0]["image"] = json!("api:3");
    let (code, reason, message) = api_error(
        deployments
            .patch("api", &PatchParams::apply("intruder"), &Patch::Apply(other.clone()))
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(message.contains("conflict with \"ramen\""), "{message}");
    let forced = deployments
        .patch("api", &PatchParams::apply("intruder").force(), &Patch::Apply(other))
        .await
        .unwrap();
    assert_eq!(
        forced.spec.unwrap().template.spec.unwrap().containers[0].image.as_deref(),
        Some("api:3")
    );
}

#[tokio::test]
async fn selectors_paging_and_deletecollection() {
    let (_double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db"), ("d", "cache")] {
        let cm: ConfigMap =
            from_json(json!({"metadata": {"name": name, "labels": {"tier": tier, "app": "shop"}}}));
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        list.items.iter().map(|c| c.name_any()).collect::<Vec<_>>()
    };
    assert_eq!(
        names(cms.list(&ListParams::default().labels("tier=web")).await.unwrap()),
        ["a", "b"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().labels("tier!=web")).await.unwrap()),
        ["c", "d"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().labels("tier in (db,cache),app")).await.unwrap()),
        ["c", "d"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().labels("tier notin (web),!missing")).await.unwrap()),
        ["c", "d"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().fields("metadata.name=b")).await.unwrap()),
        ["b"]
    );
    let first = cms.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(names(first.clone()), ["a", "b", "c"]);
    assert_eq!(first.metadata.remaining_item_count, Some(1));
    let token = first.metadata.continue_.clone().unwrap();
    let rest = cms.list(&ListParams::default().limit(3).continue_token(&token)).await.unwrap();
    assert_eq!(names(rest.clone()), ["d"]);
    assert!(rest.metadata.continue_.is_none());
    let all: Api<ConfigMap> = Api::all(client);
    assert_eq!(
        all.list(&ListParams::default().fields("metadata.namespace=default"))
            .await
            .unwrap()
            .items
            .len(),
        4
    );

    cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("tier=web"))
        .await
        .unwrap();
    assert_eq!(names(cms.list(&ListParams::default()).await.unwrap()), ["c", "d"]);
}
