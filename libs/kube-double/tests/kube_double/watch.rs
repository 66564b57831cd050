//! Watches through `kube::runtime::watcher`: events, bookmarks, and a relist after the
//! watch history expires.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::common::{WAIT, from_json, start};

#[tokio::test]
async fn raw_watch_events_and_a_too_old_resource_version() {
    let (double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &from_json(json!({"metadata": {"name": "w"}})))
        .await
        .unwrap();
    let rv = created.resource_version().unwrap();
    let mut stream = cms.watch(&WatchParams::default().timeout(10), &rv).await.unwrap().boxed();
    cms.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}})))
        .await
        .unwrap();
    cms.delete("w", &Default::default()).await.unwrap();
    assert!(
        matches!(next(&mut stream).await, WatchEvent::Modified(cm) if cm.data.as_ref().unwrap()["k"] == "v")
    );
    assert!(matches!(next(&mut stream).await, WatchEvent::Deleted(cm) if cm.name_any() == "w"));

    double.expire_watch_history();
    let mut stream = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    match next(&mut stream).await {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"))
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn the_runtime_watcher_relists_after_the_history_expires() {
    let (double, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &from_json(json!({"metadata": {"name": "before"}})))
        .await
        .unwrap();
    let config = watcher::Config::default().timeout(30);
    let mut events = watcher(cms.clone(), config).boxed();
    let mut inits = 0;
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while inits < 2 || !seen.contains(&"after".to_owned()) {
        let event = tokio::time::timeout_at(deadline, events.next())
            .await
            .expect("watcher events in time")
            .expect("open");
        match event {
            Ok(watcher::Event::InitDone) => {
                inits += 1;
                if inits == 1 {
                    // Watching now: drop its history and create an object the relist must show.
                    double.expire_watch_history();
                    cms.create(
                        &PostParams::default(),
                        &from_json(json!({"metadata": {"name": "after"}})),
                    )
                    .await
                    .unwrap();
                }
            }
            Ok(watcher::Event::InitApply(cm) | watcher::Event::Apply(cm)) => {
                seen.push(cm.name_any())
            }
            Ok(_) => {}
            Err(err) => tracing_free(&err),
        }
    }
    assert!(seen.contains(&"before".to_owned()));
    let lists = double
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch="))
        .count();
    assert!(lists >= 2, "the watcher listed again ({lists} lists)");
}

/// Watch errors (the 410) are expected on the way; the watcher recovers by itself.
fn tracing_free(_err: &watcher::Error) {}

async fn next(
    stream: &mut futures::stream::BoxStream<'static, kube::Result<WatchEvent<ConfigMap>>>,
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("an event")
        .expect("open")
        .expect("parsed")
}
