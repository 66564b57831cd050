//! The store conformance suite: every case is an async function over `Arc<dyn DocumentStore>`
//! and runs unchanged against each adapter (see `conformance.rs`).

pub mod concurrency;
pub mod crud;
pub mod durability;
pub mod expiry;
pub mod query;
pub mod unique;

use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ramen_store::{DocumentStore, StoreConfig, StoreError};

/// One case's store and the prefix its collection names carry.
pub struct Ctx {
    pub store: Arc<dyn DocumentStore>,
    prefix: String,
}

impl Ctx {
    pub fn coll(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

/// The error of a call that must fail.
#[track_caller]
pub fn err<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreError {
    match result {
        Ok(value) => panic!("expected an error, got Ok({value:?})"),
        Err(e) => e,
    }
}

/// Runs a case on a fresh embedded store in a temp dir.
pub async fn embedded<F, Fut>(case: F) -> Result<()>
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let dir = tempfile::tempdir()?;
    let store = ramen_store::open(&StoreConfig::Embedded { dir: dir.path().into() }).await?;
    case(Ctx { store, prefix: "t_".into() }).await
}

/// Runs a case on MongoDB at `RAMEN_TEST_MONGO_URI`, in a database of its own that is
/// dropped when the case passes (kept for inspection when it fails). Without the variable
/// the case reports that it was skipped and passes: MongoDB cannot be installed on the build
/// machines, and a stand-in would prove nothing.
pub async fn mongo<F, Fut>(case_name: &str, case: F) -> Result<()>
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let uri = std::env::var("RAMEN_TEST_MONGO_URI").unwrap_or_default();
    if uri.trim().is_empty() {
        // Straight to stderr, past the test harness's capture, so the skip shows in CI logs.
        let _ = writeln!(
            std::io::stderr(),
            "mongo::{case_name}: SKIPPED (RAMEN_TEST_MONGO_URI is not set; MongoDB cannot be \
             installed on this machine, so the MongoDB adapter was not exercised)"
        );
        return Ok(());
    }
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
    let short: String = case_name.chars().take(30).collect();
    let db = format!("rc_{short}_{}_{nanos}", std::process::id());
    let store = ramen_store::open(&StoreConfig::Mongo { uri: uri.clone(), db: db.clone() }).await?;
    store.ping().await.context("RAMEN_TEST_MONGO_URI is set but MongoDB does not answer")?;
    case(Ctx { store, prefix: String::new() }).await.with_context(|| format!("database {db}"))?;
    let client = mongodb::Client::with_uri_str(&uri).await?;
    client.database(&db).drop().await?;
    Ok(())
}
