use std::time::Duration;

use anyhow::bail;
use bytes::Bytes;
use futures::StreamExt;
use ramen_bus::{Bus, BusError, KvSpec, Lease, LeaseError};
use ramen_testkit::eventually;

const SECOND: Duration = Duration::from_secs(1);

fn spec(bucket: &str, ttl: Option<Duration>) -> KvSpec {
    KvSpec { bucket: bucket.into(), ttl, history: 5, ..KvSpec::default() }
}

pub async fn create_conflict(bus: &Bus) -> anyhow::Result<()> {
    let kv = bus.kv(&spec("create", None)).await?;
    let revision = kv.create("jobs.1", Bytes::from_static(b"a")).await?;
    match kv.create("jobs.1", Bytes::from_static(b"b")).await {
        Err(BusError::AlreadyExists { key }) => assert_eq!(key, "jobs.1"),
        other => bail!("expected AlreadyExists, got {other:?}"),
    }
    let entry = kv.get("jobs.1").await?.expect("the first value");
    assert_eq!((entry.value.as_ref(), entry.revision), (b"a".as_ref(), revision));
    assert!(kv.get("jobs.2").await?.is_none());
    Ok(())
}

pub async fn stale_revision_update_rejected(bus: &Bus) -> anyhow::Result<()> {
    let kv = bus.kv(&spec("update", None)).await?;
    let first = kv.put("k", Bytes::from_static(b"1")).await?;
    let second = kv.update("k", Bytes::from_static(b"2"), first).await?;
    assert!(second > first);
    match kv.update("k", Bytes::from_static(b"stale"), first).await {
        Err(BusError::WrongRevision { key }) => assert_eq!(key, "k"),
        other => bail!("expected WrongRevision, got {other:?}"),
    }
    let entry = kv.get("k").await?.expect("value");
    assert_eq!((entry.value.as_ref(), entry.revision), (b"2".as_ref(), second));
    Ok(())
}

pub async fn delete_with_revision(bus: &Bus) -> anyhow::Result<()> {
    let kv = bus.kv(&spec("delete", None)).await?;
    let first = kv.create("a", Bytes::from_static(b"1")).await?;
    let current = kv.update("a", Bytes::from_static(b"2"), first).await?;
    kv.put("b", Bytes::from_static(b"x")).await?;
    assert!(matches!(kv.delete("a", Some(first)).await, Err(BusError::WrongRevision { .. })));
    assert!(kv.get("a").await?.is_some(), "a stale delete must not delete");
    kv.delete("a", Some(current)).await?;
    assert!(kv.get("a").await?.is_none());
    assert_eq!(kv.keys().await?, vec!["b".to_owned()]);
    kv.create("a", Bytes::from_static(b"again")).await?; // a deleted key can be created anew
    kv.delete("b", None).await?;
    assert_eq!(kv.keys().await?, vec!["a".to_owned()]);
    Ok(())
}

pub async fn watch_sees_changes(bus: &Bus) -> anyhow::Result<()> {
    let kv = bus.kv(&spec("watch", None)).await?;
    let mut changes = kv.watch("jobs.>").await?;
    let revision = kv.put("jobs.7", Bytes::from_static(b"running")).await?;
    kv.put("other", Bytes::from_static(b"ignored")).await?;
    kv.delete("jobs.7", None).await?;
    let put = tokio::time::timeout(5 * SECOND, changes.next()).await?.expect("a change")?;
    assert_eq!(
        (put.key.as_str(), put.value.as_deref(), put.revision),
        ("jobs.7", Some(b"running".as_ref()), revision)
    );
    let delete = tokio::time::timeout(5 * SECOND, changes.next()).await?.expect("a change")?;
    assert_eq!((delete.key.as_str(), delete.value), ("jobs.7", None));
    Ok(())
}

pub async fn lease_acquire_held_refresh_release(bus: &Bus) -> anyhow::Result<()> {
    let kv = bus.kv(&spec("leases", Some(Duration::from_secs(60)))).await?;
    let mut lease = Lease::acquire(&kv, "job.1", "deployer-a").await?;
    match Lease::acquire(&kv, "job.1", "deployer-b").await {
        Err(LeaseError::Held { holder, .. }) => assert_eq!(holder, "deployer-a"),
        other => bail!("expected Held, got {other:?}"),
    }
    let before = lease.revision();
    lease.refresh().await?;
    assert!(lease.revision() > before);
    // The same holder (restarted with its id) takes its own lease over.
    let mut again = Lease::acquire(&kv, "job.1", "deployer-a").await?;
    assert!(matches!(lease.refresh().await, Err(LeaseError::Lost { .. })), "old handle is stale");
    again.refresh().await?;
    again.release().await?;
    let taken = Lease::acquire(&kv, "job.1", "deployer-b").await?;
    assert_eq!(taken.holder(), "deployer-b");
    Ok(())
}

pub async fn lease_expires_without_refresh(bus: &Bus) -> anyhow::Result<()> {
    let ttl = Duration::from_secs(1);
    let kv = bus.kv(&spec("shortleases", Some(ttl))).await?;
    let mut crashed = Lease::acquire(&kv, "job.9", "deployer-a").await?;
    assert!(matches!(
        Lease::acquire(&kv, "job.9", "deployer-b").await,
        Err(LeaseError::Held { .. })
    ));
    let taken = eventually("lease lapses after its TTL", 10 * SECOND, || async {
        Lease::acquire(&kv, "job.9", "deployer-b").await
    })
    .await;
    assert_eq!(taken.holder(), "deployer-b");
    match crashed.refresh().await {
        Err(err @ LeaseError::Lost { .. }) => assert!(!err.is_retryable()),
        other => bail!("expected Lost, got {other:?}"),
    }
    Ok(())
}
