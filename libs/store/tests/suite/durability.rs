//! Embedded store only: what was written survives closing and reopening the directory.

use anyhow::Result;
use ramen_store::{CollectionSpec, DocumentStore, EmbeddedStore, Filter, StoreConfig, StoreError};
use serde_json::json;

use super::err;

pub async fn survives_reopen() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig::Embedded { dir: dir.path().join("store") };
    {
        let store = ramen_store::open(&config).await?;
        store
            .ensure_collection(&CollectionSpec::new("users").unique("by_email", ["email"]))
            .await?;
        store.insert("users", "u1", &json!({"email": "a@x", "n": 1})).await?;
        store.update("users", "u1", 1, &json!({"email": "a@x", "n": 2})).await?;
        store.insert("users", "u2", &json!({"email": "b@x"})).await?;
        store.insert("users", "gone", &json!({"email": "c@x"})).await?;
        assert!(store.delete("users", "gone", None).await?);
        store.put("audit", "e1", &json!({"at": 1})).await?;
        // The store is dropped here, closing the file.
    }
    let store = ramen_store::open(&config).await?;
    let u1 = store.get("users", "u1").await?.expect("u1 survives");
    assert_eq!((u1.version, u1.doc), (2, json!({"email": "a@x", "n": 2})));
    assert!(store.get("users", "u2").await?.is_some());
    assert_eq!(store.get("users", "gone").await?, None, "a delete before close stays deleted");
    assert_eq!(store.count("users", &Filter::new()).await?, 2);
    assert_eq!(store.collections().await?, ["audit", "users"]);
    // Unique indexes survive too: b@x is taken, c@x was freed by the delete.
    let e = err(store.insert("users", "u3", &json!({"email": "b@x"})).await);
    assert!(
        matches!(&e, StoreError::UniqueViolation { index, .. } if index == "by_email"),
        "{e:?}"
    );
    store.insert("users", "u3", &json!({"email": "c@x"})).await?;
    assert!(dir.path().join("store").join(ramen_store::EMBEDDED_FILE_NAME).is_file());
    Ok(())
}

/// A second opener of the same directory gets a clear, retryable error instead of sharing
/// (and corrupting) the file; once the first closes, the directory opens again.
pub async fn second_open_is_refused_clearly() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let first = EmbeddedStore::open(dir.path()).await?;
    first.put("c", "x", &json!({"v": 1})).await?;
    let e = err(EmbeddedStore::open(dir.path()).await);
    assert!(matches!(e, StoreError::Unavailable(_)) && e.is_retryable(), "{e:?}");
    assert!(e.to_string().contains("already open"), "{e}");
    drop(first);
    let again = EmbeddedStore::open(dir.path()).await?;
    assert_eq!(again.get("c", "x").await?.map(|s| s.version), Some(1));
    Ok(())
}
