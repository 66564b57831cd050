use super::*;

#[tokio::test]
async fn sweep_drops_expired_entries_nobody_reads() {
    let state = MemoryState::with_sweep_interval(Duration::from_millis(20));
    state.set("short", Bytes::from_static(b"x"), Duration::from_millis(30)).await.unwrap();
    state.set("long", Bytes::from_static(b"y"), Duration::from_secs(60)).await.unwrap();
    state.take_tokens("bucket", BucketSpec::new(1, 1000.0), 1).await.unwrap();
    assert_eq!(state.len(), 3);
    ramen_testkit::eventually("expired entries swept", Duration::from_secs(5), || async {
        if state.len() == 1 { Ok(()) } else { Err(state.len()) }
    })
    .await;
    assert!(state.get("long").await.unwrap().is_some());
    state.close().await;
}

#[tokio::test]
async fn sweep_task_stops_when_its_owner_drops() {
    let mut state = MemoryState::with_sweep_interval(Duration::from_millis(10));
    let task = state.sweeper.as_mut().and_then(|s| s.task.take()).expect("a sweep task");
    drop(state);
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("sweep ended").unwrap();
}

#[test]
fn works_without_a_runtime_using_lazy_expiry() {
    let state = MemoryState::new();
    assert!(state.sweeper.is_none());
}
