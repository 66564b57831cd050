//! find / count / delete_many: every operator, dotted paths, sorting and paging.

use anyhow::Result;
use ramen_store::{Filter, Query, StoreError, Stored};
use serde_json::{Value, json};

use super::{Ctx, err};

/// Five deployments with numbers that sort differently as text, nested fields and gaps.
async fn seed(ctx: &Ctx, coll: &str) -> Result<()> {
    let docs = [
        ("d1", json!({"group": "a", "at": 9, "name": "b", "env": {"zone": "eu", "size": 2}})),
        ("d2", json!({"group": "a", "at": 10, "name": "a", "env": {"zone": "us", "size": 1}})),
        ("d3", json!({"group": "b", "at": 2.5, "name": "c", "tags": ["x", "y"]})),
        ("d4", json!({"group": "b", "at": 100, "name": "10", "env": {"zone": "eu"}, "note": null})),
        ("d5", json!({"group": "c", "name": "9", "tags": ["y"]})),
    ];
    for (id, doc) in docs {
        ctx.store.insert(coll, id, &doc).await?;
    }
    Ok(())
}

fn ids(found: &[Stored]) -> Vec<&str> {
    found.iter().map(|s| s.id.as_str()).collect()
}

async fn hits(ctx: &Ctx, coll: &str, filter: Filter) -> Result<Vec<String>> {
    let found = ctx.store.find(coll, &Query::new().filter(filter)).await?;
    Ok(ids(&found).into_iter().map(str::to_owned).collect())
}

pub async fn find_with_each_operator(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("deploys");
    seed(&ctx, &coll).await?;
    let f = Filter::new;
    assert_eq!(hits(&ctx, &coll, f().eq("group", "a")).await?, ["d1", "d2"]);
    assert_eq!(hits(&ctx, &coll, f().ne("group", "a")).await?, ["d3", "d4", "d5"]);
    assert_eq!(hits(&ctx, &coll, f().is_in("group", ["a", "c"])).await?, ["d1", "d2", "d5"]);
    assert_eq!(
        hits(&ctx, &coll, f().is_in("group", Vec::<Value>::new())).await?,
        Vec::<String>::new()
    );
    // Numbers compare numerically (9 < 10 < 100), across integers and floats.
    assert_eq!(hits(&ctx, &coll, f().gt("at", 9)).await?, ["d2", "d4"]);
    assert_eq!(hits(&ctx, &coll, f().gte("at", 9)).await?, ["d1", "d2", "d4"]);
    assert_eq!(hits(&ctx, &coll, f().lt("at", 9)).await?, ["d3"]);
    assert_eq!(hits(&ctx, &coll, f().lte("at", 9.0)).await?, ["d1", "d3"]);
    assert_eq!(hits(&ctx, &coll, f().gte("at", 9).lt("at", 100)).await?, ["d1", "d2"]);
    // Strings compare bytewise: "10" < "9" < "a".
    assert_eq!(hits(&ctx, &coll, f().lt("name", "a")).await?, ["d4", "d5"]);
    assert_eq!(hits(&ctx, &coll, f().gte("name", "b")).await?, ["d1", "d3"]);
    // Ordering never crosses types: no string is greater than a number.
    assert_eq!(hits(&ctx, &coll, f().gt("name", 0)).await?, Vec::<String>::new());
    assert_eq!(hits(&ctx, &coll, f().exists("at", false)).await?, ["d5"]);
    assert_eq!(hits(&ctx, &coll, f().exists("note", true)).await?, ["d4"]);
    // null matches an explicit null and a missing field; Ne matches a missing field.
    assert_eq!(
        hits(&ctx, &coll, f().eq("note", Value::Null)).await?,
        ["d1", "d2", "d3", "d4", "d5"]
    );
    assert_eq!(hits(&ctx, &coll, f().ne("env.zone", "eu")).await?, ["d2", "d3", "d5"]);
    // An array field matches by element.
    assert_eq!(hits(&ctx, &coll, f().eq("tags", "y")).await?, ["d3", "d5"]);
    // The id is a field too.
    assert_eq!(hits(&ctx, &coll, f().is_in("_id", ["d5", "d1", "zz"])).await?, ["d1", "d5"]);
    Ok(())
}

pub async fn find_on_nested_paths(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("deploys");
    seed(&ctx, &coll).await?;
    let f = Filter::new;
    assert_eq!(hits(&ctx, &coll, f().eq("env.zone", "eu")).await?, ["d1", "d4"]);
    assert_eq!(hits(&ctx, &coll, f().gte("env.size", 2)).await?, ["d1"]);
    assert_eq!(hits(&ctx, &coll, f().exists("env.size", false).exists("env", true)).await?, ["d4"]);
    assert_eq!(hits(&ctx, &coll, f().eq("env.zone", "eu").eq("group", "b")).await?, ["d4"]);
    let bad = err(ctx.store.find(&coll, &Query::new().eq("env..zone", "eu")).await);
    assert!(matches!(bad, StoreError::InvalidQuery(_)), "{bad:?}");
    let bad = err(ctx.store.find(&coll, &Query::new().gt("at", json!({"a": 1}))).await);
    assert!(matches!(bad, StoreError::InvalidQuery(_)), "{bad:?}");
    let bad = err(ctx.store.count(&coll, &Filter::new().eq("$where", 1)).await);
    assert!(matches!(bad, StoreError::InvalidQuery(_)), "{bad:?}");
    Ok(())
}

pub async fn sort_skip_limit(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("deploys");
    seed(&ctx, &coll).await?;
    let find = |q: Query| {
        let (store, coll) = (ctx.store.clone(), coll.clone());
        async move { store.find(&coll, &q).await }
    };
    // Missing sorts first ascending, like null; numbers numerically.
    assert_eq!(ids(&find(Query::new().sort_asc("at")).await?), ["d5", "d3", "d1", "d2", "d4"]);
    assert_eq!(ids(&find(Query::new().sort_desc("at")).await?), ["d4", "d2", "d1", "d3", "d5"]);
    assert_eq!(ids(&find(Query::new().sort_asc("name")).await?), ["d4", "d5", "d2", "d1", "d3"]);
    assert_eq!(ids(&find(Query::new().sort_desc("name")).await?), ["d3", "d1", "d2", "d5", "d4"]);
    // Compound: group descending, then at ascending; ties fall back to the id.
    let by_group = Query::new().sort_desc("group").sort_asc("at");
    assert_eq!(ids(&find(by_group.clone()).await?), ["d5", "d3", "d4", "d1", "d2"]);
    assert_eq!(ids(&find(Query::new().sort_asc("group")).await?), ["d1", "d2", "d3", "d4", "d5"]);
    assert_eq!(ids(&find(by_group.clone().skip(1).limit(2)).await?), ["d3", "d4"]);
    assert_eq!(ids(&find(by_group.clone().skip(4).limit(10)).await?), ["d2"]);
    assert!(find(by_group.clone().skip(5)).await?.is_empty());
    assert!(find(by_group.limit(0)).await?.is_empty());
    let page = find(Query::new().eq("group", "a").sort_desc("at").limit(1)).await?;
    assert_eq!(ids(&page), ["d2"]);
    assert_eq!(page[0].doc["env"]["zone"], "us");
    Ok(())
}

pub async fn count_and_delete_many(ctx: Ctx) -> Result<()> {
    let coll = ctx.coll("deploys");
    seed(&ctx, &coll).await?;
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 5);
    assert_eq!(ctx.store.count(&coll, &Filter::new().eq("group", "b")).await?, 2);
    assert_eq!(ctx.store.count(&ctx.coll("empty"), &Filter::new()).await?, 0);
    assert_eq!(ctx.store.delete_many(&coll, &Filter::new().gte("at", 10)).await?, 2);
    assert_eq!(hits(&ctx, &coll, Filter::new()).await?, ["d1", "d3", "d5"]);
    assert_eq!(ctx.store.delete_many(&coll, &Filter::new().eq("group", "zzz")).await?, 0);
    assert_eq!(ctx.store.delete_many(&coll, &Filter::new()).await?, 3);
    assert_eq!(ctx.store.count(&coll, &Filter::new()).await?, 0);
    Ok(())
}
