use super::{StoreConfig, StoreError, open};

#[test]
fn select_picks_mongo_only_when_a_uri_is_set() {
    let local = StoreConfig::select("  ", "ramen", "/data/store");
    assert!(matches!(local, StoreConfig::Embedded { ref dir } if dir.ends_with("store")));
    let cloud = StoreConfig::select("mongodb://u:secret@db:27017", "ramen", "/data/store");
    assert!(matches!(cloud, StoreConfig::Mongo { ref db, .. } if db == "ramen"));
    let shown = format!("{cloud:?}");
    assert!(!shown.contains("secret") && shown.contains("redacted"), "{shown}");
}

#[tokio::test]
async fn mongo_names_are_checked_before_connecting() {
    let config = StoreConfig::Mongo { uri: "mongodb://127.0.0.1:1".into(), db: "a.b".into() };
    let e = open(&config).await.err().expect("refused");
    assert!(matches!(e, StoreError::InvalidName { what: "database", .. }), "{e:?}");
}

/// The real driver against a loopback port nothing listens on: the failure must come back
/// as the retryable `Unavailable`, which readiness and JetStream handlers rely on.
#[tokio::test]
async fn an_unreachable_mongo_is_unavailable() {
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).unwrap().port();
    let uri =
        format!("mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300");
    let store = open(&StoreConfig::Mongo { uri, db: "ramen".into() }).await.expect("lazy connect");
    let e = store.ping().await.expect_err("nothing listens there");
    assert!(matches!(e, StoreError::Unavailable(_)) && e.is_retryable(), "{e:?}");
    let e = store.get("users", "u1").await.expect_err("nothing listens there");
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
}
