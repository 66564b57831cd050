//! The cases of the conformance suite, each taking any [`BlobStore`].

use std::sync::Arc;

use anyhow::ensure;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use ramen_blob::{BlobError, BlobStore};

type Store = Arc<dyn BlobStore>;

pub async fn round_trip(store: Store) -> anyhow::Result<()> {
    store.put("groups/g1/abc/pkg/tool.py", Bytes::from_static(b"print('hi')")).await?;
    let got = store.get("groups/g1/abc/pkg/tool.py").await?;
    ensure!(got.as_deref() == Some(&b"print('hi')"[..]), "got {got:?}");
    Ok(())
}

pub async fn overwrite_replaces_content(store: Store) -> anyhow::Result<()> {
    store.put("groups/g1/k", Bytes::from_static(b"a much longer first version")).await?;
    store.put("groups/g1/k", Bytes::from_static(b"v2")).await?;
    let got = store.get("groups/g1/k").await?;
    ensure!(got.as_deref() == Some(&b"v2"[..]), "got {got:?}");
    ensure!(store.list("groups/g1/").await? == ["groups/g1/k"], "one object after overwrite");
    Ok(())
}

pub async fn missing_key_is_none(store: Store) -> anyhow::Result<()> {
    ensure!(store.get("groups/none/here").await?.is_none());
    store.put("groups/g1/file", Bytes::from_static(b"x")).await?;
    // A "directory" of other keys is not an object, and neither is a path under an object.
    ensure!(store.get("groups/g1").await?.is_none());
    ensure!(store.get("groups/g1/file/below").await?.is_none());
    Ok(())
}

pub async fn exists_tracks_puts_and_deletes(store: Store) -> anyhow::Result<()> {
    ensure!(!store.exists("groups/g1/k").await?);
    store.put("groups/g1/k", Bytes::new()).await?;
    ensure!(store.exists("groups/g1/k").await?, "an empty object exists");
    ensure!(!store.exists("groups/g1").await?, "a prefix is not an object");
    store.delete("groups/g1/k").await?;
    ensure!(!store.exists("groups/g1/k").await?);
    Ok(())
}

pub async fn list_by_nested_prefix(store: Store) -> anyhow::Result<()> {
    for key in ["groups/a/x/2", "groups/a/x/1", "groups/a/y", "groups/ab/z", "groups/b/w", "top"] {
        store.put(key, Bytes::from_static(b".")).await?;
    }
    ensure!(store.list("groups/a/").await? == ["groups/a/x/1", "groups/a/x/2", "groups/a/y"]);
    ensure!(store.list("groups/a/x/").await? == ["groups/a/x/1", "groups/a/x/2"]);
    // A plain string prefix, as on S3: `groups/a` also matches `groups/ab/...`.
    let partial = store.list("groups/a").await?;
    ensure!(
        partial == ["groups/a/x/1", "groups/a/x/2", "groups/a/y", "groups/ab/z"],
        "{partial:?}"
    );
    ensure!(store.list("").await?.len() == 6, "the empty prefix lists everything");
    Ok(())
}

/// More keys than S3 returns in one page (1000), created concurrently to stay quick.
pub async fn list_crosses_a_page(store: Store) -> anyhow::Result<()> {
    let keys: Vec<String> = (0..1100).map(|i| format!("groups/many/{i:05}")).collect();
    futures::stream::iter(keys.clone())
        .map(|key| {
            let store = store.clone();
            async move { store.put(&key, Bytes::from_static(b"1")).await }
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await?;
    store.put("groups/other", Bytes::from_static(b"1")).await?;
    let listed = store.list("groups/many/").await?;
    ensure!(listed == keys, "listed {} keys, first {:?}", listed.len(), listed.first());
    ensure!(store.delete_prefix("groups/many/").await? == 1100);
    ensure!(store.list("groups/").await? == ["groups/other"]);
    Ok(())
}

pub async fn list_of_an_empty_prefix(store: Store) -> anyhow::Result<()> {
    ensure!(store.list("groups/nothing/").await?.is_empty());
    ensure!(store.list("").await?.is_empty(), "a new store is empty");
    Ok(())
}

pub async fn delete_is_idempotent(store: Store) -> anyhow::Result<()> {
    store.put("groups/g1/k", Bytes::from_static(b"x")).await?;
    store.delete("groups/g1/k").await?;
    store.delete("groups/g1/k").await?;
    store.delete("groups/never/was").await?;
    ensure!(store.get("groups/g1/k").await?.is_none());
    Ok(())
}

pub async fn delete_prefix_spares_sibling_prefix(store: Store) -> anyhow::Result<()> {
    for key in ["groups/a/1", "groups/a/sub/2", "groups/a/sub/deep/3", "groups/ab/4", "groups/b"] {
        store.put(key, Bytes::from_static(b".")).await?;
    }
    ensure!(store.delete_prefix("groups/a/").await? == 3);
    ensure!(store.list("").await? == ["groups/ab/4", "groups/b"]);
    ensure!(store.delete_prefix("groups/a/").await? == 0, "nothing left to delete");
    // The store stays usable under the emptied prefix.
    store.put("groups/a/again", Bytes::from_static(b".")).await?;
    ensure!(store.exists("groups/a/again").await?);
    Ok(())
}

pub async fn invalid_keys_rejected_with_reason(store: Store) -> anyhow::Result<()> {
    let cases = [
        ("", "empty"),
        ("/etc/passwd", "starts with '/'"),
        ("groups/../../escape", "'..'"),
        ("groups/./x", "'.'"),
        ("groups//x", "empty segment"),
        ("groups\\x", "backslash"),
        ("groups/x\0y", "NUL"),
    ];
    for (key, why) in cases {
        let err = store.put(key, Bytes::from_static(b"x")).await.expect_err(key);
        let BlobError::InvalidKey { key: named, reason } = &err else {
            anyhow::bail!("{key:?}: expected InvalidKey, got {err:?}")
        };
        ensure!(named == key && reason.contains(why), "{key:?}: {err}");
        ensure!(matches!(store.get(key).await, Err(BlobError::InvalidKey { .. })));
    }
    let long = "k".repeat(1025);
    ensure!(matches!(store.exists(&long).await, Err(BlobError::InvalidKey { .. })));
    ensure!(matches!(store.list("../").await, Err(BlobError::InvalidKey { .. })));
    let everything = store.delete_prefix("").await;
    ensure!(matches!(everything, Err(BlobError::InvalidKey { .. })), "{everything:?}");
    ensure!(store.list("").await?.is_empty(), "nothing was written");
    Ok(())
}

pub async fn binary_content_intact(store: Store) -> anyhow::Result<()> {
    let body: Vec<u8> =
        (0..=255u8).cycle().take(300_000).chain([0, 0, 0xff, b'\n', b'\r']).collect();
    store.put("groups/g1/blob.bin", Bytes::from(body.clone())).await?;
    let got = store.get("groups/g1/blob.bin").await?.expect("stored");
    ensure!(got.len() == body.len() && got == body, "content changed in transit");
    store.put("groups/g1/empty", Bytes::new()).await?;
    ensure!(store.get("groups/g1/empty").await?.as_deref() == Some(&b""[..]));
    Ok(())
}

pub async fn ping_answers(store: Store) -> anyhow::Result<()> {
    store.ping().await?;
    Ok(())
}

/// Writers race on one key while readers poll it: every read is one whole version.
pub async fn concurrent_overwrites_never_torn(store: Store) -> anyhow::Result<()> {
    const SIZE: usize = 64 * 1024;
    store.put("groups/g1/race", Bytes::from(vec![b'a'; SIZE])).await?;
    let writers = (0..8u8).map(|i| {
        let store = store.clone();
        async move { store.put("groups/g1/race", Bytes::from(vec![b'b' + i; SIZE])).await }
    });
    let readers = (0..8).map(|_| {
        let store = store.clone();
        async move {
            let body = store.get("groups/g1/race").await?.expect("the key always exists");
            let whole = body.len() == SIZE && body.iter().all(|b| *b == body[0]);
            Ok::<_, BlobError>(whole)
        }
    });
    let (written, reads) = futures::future::join(
        futures::future::try_join_all(writers),
        futures::future::try_join_all(readers),
    )
    .await;
    written?;
    let reads = reads?;
    ensure!(reads.iter().all(|whole| *whole), "a read saw a torn object");
    ensure!(store.list("groups/g1/").await? == ["groups/g1/race"], "no temp file is listed");
    Ok(())
}
