//! Unique indexes: enforced on every write path, named in the error, built over existing data.

use anyhow::Result;
use ramen_store::{CollectionSpec, StoreError};
use serde_json::json;

use super::{Ctx, err};

fn violates(e: &StoreError, index: &str) -> bool {
    matches!(e, StoreError::UniqueViolation { index: i, .. } if i == index)
}

pub async fn unique_violation_on_insert(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("users");
    let spec = CollectionSpec::new(&coll).unique("by_email", ["email"]);
    ctx.store.ensure_collection(&spec).await?;
    ctx.store.insert(&coll, "u1", &json!({"email": "a@x"})).await?;
    let e = err(ctx.store.insert(&coll, "u2", &json!({"email": "a@x"})).await);
    assert!(violates(&e, "by_email"), "{e:?}");
    assert_eq!(ctx.store.get(&coll, "u2").await?, None);
    let e = err(ctx.store.put(&coll, "u3", &json!({"email": "a@x"})).await);
    assert!(violates(&e, "by_email"), "put must check unique indexes too: {e:?}");
    ctx.store.insert(&coll, "u2", &json!({"email": "b@x"})).await?;
    // Documents without the field are not indexed, so they never collide.
    ctx.store.insert(&coll, "n1", &json!({"name": "no email"})).await?;
    ctx.store.insert(&coll, "n2", &json!({"name": "no email either"})).await?;
    // Deleting the holder frees the value.
    assert!(ctx.store.delete(&coll, "u1", None).await?);
    ctx.store.insert(&coll, "u4", &json!({"email": "a@x"})).await?;
    Ok(())
}

pub async fn unique_violation_on_update(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("users");
    let spec = CollectionSpec::new(&coll).unique("by_email", ["email"]);
    ctx.store.ensure_collection(&spec).await?;
    ctx.store.insert(&coll, "u1", &json!({"email": "a@x"})).await?;
    ctx.store.insert(&coll, "u2", &json!({"email": "b@x"})).await?;
    let e = err(ctx.store.update(&coll, "u2", 1, &json!({"email": "a@x"})).await);
    assert!(violates(&e, "by_email"), "{e:?}");
    let u2 = ctx.store.get(&coll, "u2").await?.expect("present");
    assert_eq!((u2.version, u2.doc), (1, json!({"email": "b@x"})));
    // Rewriting a document with its own value is no conflict.
    assert_eq!(ctx.store.update(&coll, "u1", 1, &json!({"email": "a@x", "n": 1})).await?, 2);
    // Moving off a value frees it for others.
    ctx.store.update(&coll, "u1", 2, &json!({"email": "c@x"})).await?;
    assert_eq!(ctx.store.update(&coll, "u2", 1, &json!({"email": "a@x"})).await?, 2);
    Ok(())
}

pub async fn compound_unique_index(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("members");
    let spec = CollectionSpec::new(&coll).unique("by_group_user", ["group", "user.id"]);
    ctx.store.ensure_collection(&spec).await?;
    let m = |g: &str, u: &str| json!({"group": g, "user": {"id": u}});
    ctx.store.insert(&coll, "1", &m("g1", "ada")).await?;
    ctx.store.insert(&coll, "2", &m("g2", "ada")).await?;
    ctx.store.insert(&coll, "3", &m("g1", "bob")).await?;
    let e = err(ctx.store.insert(&coll, "4", &m("g1", "ada")).await);
    assert!(violates(&e, "by_group_user"), "{e:?}");
    // Numbers that are equal collide whatever their notation.
    ctx.store.insert(&coll, "5", &json!({"group": "g3", "user": {"id": 1}})).await?;
    let e = err(ctx.store.insert(&coll, "6", &json!({"group": "g3", "user": {"id": 1.0}})).await);
    assert!(violates(&e, "by_group_user"), "{e:?}");
    Ok(())
}

pub async fn ensure_collection_is_idempotent_and_checks_data(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("keys");
    let spec = CollectionSpec::new(&coll).unique("by_hash", ["hash"]).index("by_owner", ["owner"]);
    ctx.store.ensure_collection(&spec).await?;
    ctx.store.insert(&coll, "k1", &json!({"hash": "h1", "owner": "o", "label": "same"})).await?;
    ctx.store.insert(&coll, "k2", &json!({"hash": "h2", "owner": "o", "label": "same"})).await?;
    ctx.store.ensure_collection(&spec).await?;
    assert_eq!(ctx.store.count(&coll, &Default::default()).await?, 2, "data survives");
    let e = err(ctx.store.insert(&coll, "k3", &json!({"hash": "h1"})).await);
    assert!(violates(&e, "by_hash"), "the index survives a repeated ensure: {e:?}");

    // Existing data violates a new unique index: refused, naming it; the rest keeps working.
    let clash = spec.clone().unique("by_label", ["label"]);
    let e = err(ctx.store.ensure_collection(&clash).await);
    assert!(matches!(&e, StoreError::IndexConflict { index, .. } if index == "by_label"), "{e:?}");
    ctx.store.insert(&coll, "k4", &json!({"hash": "h4", "label": "same"})).await?;

    // Same name, other fields.
    let renamed = CollectionSpec::new(&coll).unique("by_hash", ["owner"]);
    let e = err(ctx.store.ensure_collection(&renamed).await);
    assert!(matches!(&e, StoreError::IndexConflict { index, .. } if index == "by_hash"), "{e:?}");

    // A unique index the data satisfies is built over it and enforced from then on.
    ctx.store.delete_many(&coll, &Default::default()).await?;
    ctx.store.insert(&coll, "k5", &json!({"hash": "h5", "label": "l5"})).await?;
    ctx.store.ensure_collection(&clash).await?;
    let e = err(ctx.store.insert(&coll, "k6", &json!({"hash": "h6", "label": "l5"})).await);
    assert!(violates(&e, "by_label"), "{e:?}");
    Ok(())
}
