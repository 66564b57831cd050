//! Single-document reads and writes, versions and input validation.

use anyhow::Result;
use ramen_store::{StoreError, Stored};
use serde_json::json;

use super::{Ctx, err};

pub async fn insert_get_round_trip(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    let body = json!({"name": "ada", "n": 3, "f": 2.5, "tags": ["x"], "deep": {"a": null}});
    assert_eq!(ctx.store.insert(&coll, "a", &body).await?, 1);
    let got = ctx.store.get(&coll, "a").await?;
    assert_eq!(got, Some(Stored { id: "a".into(), version: 1, doc: body }));
    assert_eq!(ctx.store.get(&coll, "missing").await?, None);
    assert_eq!(ctx.store.get(&ctx.coll("never_written"), "a").await?, None);
    Ok(())
}

pub async fn insert_duplicate_id_already_exists(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    ctx.store.insert(&coll, "a", &json!({"v": 1})).await?;
    let e = err(ctx.store.insert(&coll, "a", &json!({"v": 2})).await);
    assert!(matches!(&e, StoreError::AlreadyExists { id, .. } if id == "a"), "{e:?}");
    assert_eq!(ctx.store.get(&coll, "a").await?.map(|s| s.doc), Some(json!({"v": 1})));
    Ok(())
}

pub async fn update_bumps_version(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    ctx.store.insert(&coll, "a", &json!({"v": 1})).await?;
    assert_eq!(ctx.store.update(&coll, "a", 1, &json!({"v": 2})).await?, 2);
    assert_eq!(ctx.store.update(&coll, "a", 2, &json!({"v": 3, "new": true})).await?, 3);
    let got = ctx.store.get(&coll, "a").await?.expect("present");
    assert_eq!((got.version, got.doc), (3, json!({"v": 3, "new": true})));
    Ok(())
}

pub async fn stale_version_conflicts_and_changes_nothing(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    ctx.store.insert(&coll, "a", &json!({"v": 1})).await?;
    ctx.store.update(&coll, "a", 1, &json!({"v": 2})).await?;
    let e = err(ctx.store.update(&coll, "a", 1, &json!({"v": "stale"})).await);
    assert!(matches!(e, StoreError::VersionConflict { expected: 1, actual: 2, .. }), "{e:?}");
    assert!(e.is_retryable());
    let got = ctx.store.get(&coll, "a").await?.expect("present");
    assert_eq!((got.version, got.doc), (2, json!({"v": 2})));
    Ok(())
}

pub async fn missing_ids(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    ctx.store.insert(&coll, "other", &json!({})).await?;
    let e = err(ctx.store.update(&coll, "nope", 1, &json!({})).await);
    assert!(matches!(&e, StoreError::NotFound { id, .. } if id == "nope"), "{e:?}");
    assert!(!ctx.store.delete(&coll, "nope", None).await?);
    assert!(!ctx.store.delete(&coll, "nope", Some(1)).await?);
    assert_eq!(ctx.store.get(&coll, "nope").await?, None);
    Ok(())
}

pub async fn delete_with_expected_version(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    ctx.store.insert(&coll, "a", &json!({"v": 1})).await?;
    ctx.store.update(&coll, "a", 1, &json!({"v": 2})).await?;
    let e = err(ctx.store.delete(&coll, "a", Some(1)).await);
    assert!(matches!(e, StoreError::VersionConflict { expected: 1, actual: 2, .. }), "{e:?}");
    assert!(ctx.store.get(&coll, "a").await?.is_some(), "a stale delete must keep the document");
    assert!(ctx.store.delete(&coll, "a", Some(2)).await?);
    assert_eq!(ctx.store.get(&coll, "a").await?, None);
    // The id is free again and starts over at version 1.
    assert_eq!(ctx.store.insert(&coll, "a", &json!({"v": "again"})).await?, 1);
    assert!(ctx.store.delete(&coll, "a", None).await?);
    Ok(())
}

pub async fn put_upserts_and_bumps(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    assert_eq!(ctx.store.put(&coll, "a", &json!({"v": 1})).await?, 1);
    assert_eq!(ctx.store.put(&coll, "a", &json!({"v": 2})).await?, 2);
    let got = ctx.store.get(&coll, "a").await?.expect("present");
    assert_eq!((got.version, got.doc), (2, json!({"v": 2})));
    Ok(())
}

pub async fn invalid_inputs_are_refused_clearly(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("docs");
    let s = &ctx.store;
    let name = |e: StoreError| matches!(e, StoreError::InvalidName { .. });
    assert!(name(err(s.insert("", "a", &json!({})).await)));
    assert!(name(err(s.insert("bad\0name", "a", &json!({})).await)));
    assert!(name(err(s.insert("a:b", "a", &json!({})).await)));
    assert!(name(err(s.insert(&"c".repeat(500), "a", &json!({})).await)));
    assert!(name(err(s.insert(&coll, "", &json!({})).await)));
    assert!(name(err(s.insert(&coll, "a\0b", &json!({})).await)));
    assert!(name(err(s.get(&coll, &"i".repeat(600)).await)));
    let doc = |e: StoreError| matches!(e, StoreError::InvalidDocument(_));
    assert!(doc(err(s.insert(&coll, "a", &json!([1, 2])).await)));
    assert!(doc(err(s.insert(&coll, "a", &json!({"_id": "x"})).await)));
    assert!(doc(err(s.insert(&coll, "a", &json!({"_v": 3})).await)));
    assert!(doc(err(s.insert(&coll, "a", &json!({"x": {"$set": 1}})).await)));
    assert!(doc(err(s.insert(&coll, "a", &json!({"big": u64::MAX})).await)));
    // Ids are opaque: any non-empty string without NUL works.
    assert_eq!(s.insert(&coll, "user:ada@example.com/ü", &json!({})).await?, 1);
    assert_eq!(s.get(&coll, "a").await?, None, "refused writes must not store anything");
    Ok(())
}
