//! Retention: a document past its collection's retention is gone for every read and write at
//! once, whatever the adapter, before the background deletion gets to it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use ramen_store::{CollectionSpec, Filter, Query, StoreError};
use serde_json::json;

use super::{Ctx, err};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

pub async fn expired_documents_are_gone_for_reads_and_writes(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("calls");
    let spec = CollectionSpec::new(&coll)
        .index("by_at", ["at_ms"])
        .expire_after("at_ms", Duration::from_secs(3600));
    ctx.store.ensure_collection(&spec).await?;
    let now = now_ms();
    let old = now - 2 * 3600 * 1000;
    ctx.store.insert(&coll, "old", &json!({"at_ms": old, "tool": "a"})).await?;
    ctx.store.insert(&coll, "new", &json!({"at_ms": now, "tool": "a"})).await?;
    // No time, or not a number: never expires.
    ctx.store.insert(&coll, "timeless", &json!({"tool": "a"})).await?;
    ctx.store.insert(&coll, "text", &json!({"at_ms": "yesterday", "tool": "a"})).await?;

    assert_eq!(ctx.store.get(&coll, "old").await?, None, "expired: not returned");
    assert!(ctx.store.get(&coll, "new").await?.is_some());
    let found: Vec<String> =
        ctx.store.find(&coll, &Query::new()).await?.into_iter().map(|s| s.id).collect();
    assert_eq!(found, ["new", "text", "timeless"]);
    assert_eq!(ctx.store.count(&coll, &Filter::new().eq("tool", "a")).await?, 3);

    // Writes find nothing at an expired id: an insert takes it, a delete finds none.
    ctx.store.insert(&coll, "old", &json!({"at_ms": now, "tool": "b"})).await?;
    assert_eq!(ctx.store.get(&coll, "old").await?.map(|s| s.version), Some(1));
    ctx.store.insert(&coll, "gone", &json!({"at_ms": old})).await?;
    assert!(!ctx.store.delete(&coll, "gone", None).await?);
    ctx.store.insert(&coll, "gone2", &json!({"at_ms": old})).await?;
    let e = err(ctx.store.update(&coll, "gone2", 1, &json!({"at_ms": now})).await);
    assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
    ctx.store.insert(&coll, "gone3", &json!({"at_ms": old})).await?;
    assert_eq!(ctx.store.delete_many(&coll, &Filter::new()).await?, 4, "only live ones counted");
    Ok(())
}

pub async fn a_retention_is_checked(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("bad_retention");
    let zero = CollectionSpec::new(&coll).expire_after("at_ms", Duration::from_millis(500));
    let e = err(ctx.store.ensure_collection(&zero).await);
    assert!(e.to_string().contains("at least a second"), "{e}");
    let unique = CollectionSpec::new(&coll)
        .unique("by_name", ["name"])
        .expire_after("at_ms", Duration::from_secs(60));
    let e = err(ctx.store.ensure_collection(&unique).await);
    assert!(e.to_string().contains("no unique indexes"), "{e}");
    let on_id = CollectionSpec::new(&coll).expire_after("_id", Duration::from_secs(60));
    assert!(ctx.store.ensure_collection(&on_id).await.is_err());
    Ok(())
}

/// An operator changes a retention (`calls.retention`): the collection is ensured again with
/// the new one, which applies to reads at once; ensuring it again with the same is a no-op.
pub async fn a_retention_can_be_changed(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("retention_changed");
    let spec = |hours: u64| {
        CollectionSpec::new(&coll)
            .index("by_at", ["at_ms"])
            .expire_after("at_ms", Duration::from_secs(hours * 3600))
    };
    ctx.store.ensure_collection(&spec(3)).await?;
    let now = now_ms();
    ctx.store.insert(&coll, "two_hours", &json!({"at_ms": now - 2 * 3600 * 1000})).await?;
    ctx.store.insert(&coll, "just_now", &json!({"at_ms": now})).await?;
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 2, "both within three hours");
    ctx.store.ensure_collection(&spec(1)).await?;
    assert_eq!(ctx.store.get(&coll, "two_hours").await?, None, "past the new retention");
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 1);
    ctx.store.ensure_collection(&spec(1)).await?;
    assert!(ctx.store.get(&coll, "just_now").await?.is_some());
    Ok(())
}

/// The embedded store deletes expired documents itself: on the first write to the collection,
/// then at most once a minute (a purge can also be asked for).
pub async fn the_embedded_store_purges_expired_documents() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let store = ramen_store::EmbeddedStore::open(dir.path().join("store")).await?;
    let spec = CollectionSpec::new("calls").expire_after("at_ms", Duration::from_secs(1));
    ramen_store::DocumentStore::ensure_collection(&store, &spec).await?;
    let old = now_ms() - 5_000;
    ramen_store::DocumentStore::insert(&store, "calls", "a", &json!({"at_ms": old})).await?;
    assert_eq!(store.purge_expired("calls").await?, 0, "the insert's purge deleted it already");
    ramen_store::DocumentStore::insert(&store, "calls", "b", &json!({"at_ms": old})).await?;
    ramen_store::DocumentStore::insert(&store, "calls", "c", &json!({"at_ms": now_ms()})).await?;
    assert_eq!(store.purge_expired("calls").await?, 1, "within the minute, `b` waited");
    assert_eq!(store.purge_expired("calls").await?, 0);
    Ok(())
}

/// A batch of records written at once, as auth stores a node's call records: all of it lands,
/// a batch written again (a redelivery) lands over itself, and an old record in it is
/// expired like any other.
pub async fn put_many_writes_a_batch_idempotently(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("batched");
    let spec = CollectionSpec::new(&coll)
        .index("by_at", ["at_ms"])
        .expire_after("at_ms", Duration::from_secs(3600));
    ctx.store.ensure_collection(&spec).await?;
    let now = now_ms();
    let batch: Vec<(String, serde_json::Value)> = (0..50)
        .map(|n| (format!("r{n:03}"), json!({"at_ms": now - n, "n": n})))
        .chain([("old".to_owned(), json!({"at_ms": now - 2 * 3600 * 1000, "n": -1}))])
        .collect();
    ctx.store.put_many(&coll, &batch).await?;
    ctx.store.put_many(&coll, &batch).await?;
    ctx.store.put_many(&coll, &[]).await?;
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 50, "once each; the old one expired");
    let newest = ctx.store.find(&coll, &Query::new().sort_desc("at_ms").limit(2)).await?;
    let ids: Vec<&str> = newest.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["r000", "r001"]);
    assert_eq!(newest[0].doc, json!({"at_ms": now, "n": 0}));
    // Some already there with other contents, some new: each is written whatever it was.
    let mixed = [
        ("r000".to_owned(), json!({"at_ms": now, "n": 100})),
        ("r050".to_owned(), json!({"at_ms": now - 50, "n": 50})),
    ];
    ctx.store.put_many(&coll, &mixed).await?;
    assert_eq!(ctx.store.get(&coll, "r000").await?.unwrap().doc, mixed[0].1, "written over");
    assert_eq!(ctx.store.get(&coll, "r050").await?.unwrap().doc, mixed[1].1);
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 51);
    let e = err(ctx.store.put_many(&coll, &[("bad".into(), json!([1]))]).await);
    assert!(matches!(e, StoreError::InvalidDocument(_)), "not an object: refused, {e:?}");
    Ok(())
}
