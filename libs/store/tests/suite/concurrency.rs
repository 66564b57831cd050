//! The typed layer, optimistic concurrency under contention, and listing collections.

use anyhow::Result;
use ramen_store::{Collection, CollectionSpec, Filter, Query, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::task::JoinSet;

use super::{Ctx, err};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Counter {
    n: u64,
    by: Vec<u32>,
}

const TASKS: u32 = 12;
const EACH: u32 = 8;

/// Many tasks increment one counter through `modify`; only optimistic concurrency that
/// really rejects stale writes ends at the exact total with every increment recorded.
pub async fn concurrent_modify_counts_exactly(ctx: Ctx) -> Result<()> {
    let counters: Collection<Counter> = Collection::new(ctx.store.clone(), ctx.coll("counters"));
    counters.insert("c", &Counter { n: 0, by: Vec::new() }).await?;
    let mut tasks = JoinSet::new();
    for task in 0..TASKS {
        let counters = counters.clone();
        tasks.spawn(async move {
            for _ in 0..EACH {
                counters
                    .modify("c", |c| {
                        c.n += 1;
                        c.by.push(task);
                        Ok::<_, StoreError>(())
                    })
                    .await?;
            }
            Ok::<_, StoreError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let total = u64::from(TASKS * EACH);
    let end = counters.get("c").await?.expect("counter exists");
    assert_eq!(end.value.n, total);
    assert_eq!(end.value.by.len() as u64, total);
    assert_eq!(end.version, total + 1, "one successful write per increment");
    for task in 0..TASKS {
        assert_eq!(end.value.by.iter().filter(|t| **t == task).count() as u32, EACH);
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct User {
    email: String,
    role: String,
}

pub async fn typed_collection(ctx: Ctx) -> Result<()> {
    let name = ctx.coll("users");
    ctx.store.ensure_collection(&CollectionSpec::new(&name).unique("by_email", ["email"])).await?;
    let users: Collection<User> = Collection::new(ctx.store.clone(), &name);
    let ada = User { email: "ada@x".into(), role: "admin".into() };
    assert_eq!(users.insert("u1", &ada).await?, 1);
    users.insert("u2", &User { email: "bob@x".into(), role: "member".into() }).await?;
    let mut read = users.get("u1").await?.expect("present");
    assert_eq!((read.version, &read.value), (1, &ada));
    let stale = read.clone();
    read.value.role = "member".into();
    let written = users.update(read).await?;
    assert_eq!(written.version, 2);
    let e = err(users.update(stale).await);
    assert!(matches!(e, StoreError::VersionConflict { expected: 1, actual: 2, .. }), "{e:?}");
    let found = users.find(&Query::new().eq("role", "member").sort_asc("email")).await?;
    assert_eq!(found.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["u1", "u2"]);
    let by_email = users.find_one(Filter::new().eq("email", "bob@x")).await?.expect("found");
    assert_eq!(by_email.id, "u2");
    // A closure's own error aborts without writing.
    let refused: Result<_, StoreError> =
        users.modify("u2", |_| Err(StoreError::InvalidQuery("no".into()))).await.map(|(v, ())| v);
    assert!(refused.is_err());
    assert_eq!(users.get("u2").await?.expect("present").version, 1);
    let missing = users.modify("nobody", |_| Ok::<_, StoreError>(())).await;
    assert!(matches!(missing, Err(StoreError::NotFound { .. })), "{missing:?}");
    // A stored document of another shape is a clear decode error, not a panic.
    ctx.store.put(&name, "odd", &json!({"email": 5})).await?;
    assert!(matches!(users.get("odd").await, Err(StoreError::Decode { .. })));
    assert_eq!(
        users.put("u2", &ada.clone()).await.map_err(|e| e.to_string()),
        Err(format!(
            "{name}: unique index `by_email` already holds another document with these values"
        ))
    );
    assert!(users.delete("u2", Some(1)).await?);
    Ok(())
}

pub async fn collections_are_listed(ctx: Ctx) -> Result<()> {
    let (a, b) = (ctx.coll("auth_users"), ctx.coll("deployer_groups"));
    ctx.store.ensure_collection(&CollectionSpec::new(&a)).await?;
    ctx.store.ensure_collection(&CollectionSpec::new(&b).unique("by_name", ["name"])).await?;
    let listed = ctx.store.collections().await?;
    assert!(listed.contains(&a) && listed.contains(&b), "{listed:?}");
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
    ctx.store.ping().await?;
    Ok(())
}
