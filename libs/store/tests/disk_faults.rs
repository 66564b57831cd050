//! The embedded store on a full disk and on a read-only one: a clear error naming the file,
//! nothing already stored lost (reopened and compared), and a full disk recovered from without
//! a restart once space is freed.
//!
//! Each case needs a filesystem of its own: the tests run as root, for whom permissions do not
//! make a directory read-only, and only a small filesystem fills up. So each test runs its
//! case in a child copy of this test binary inside a private mount namespace (`unshare
//! --mount`; for a user other than root, in a user namespace of its own too), with a small
//! tmpfs mounted on the case's directory. Nothing is mounted outside the child.

use std::path::{Path, PathBuf};
use std::process::Command;

use ramen_store::{CollectionSpec, DocumentStore, EmbeddedStore, Filter, StoreError};
use serde_json::{Value, json};

/// Set in the child: the tmpfs directory the case runs in.
const CASE_DIR: &str = "RAMEN_STORE_FAULT_DIR";
/// The tmpfs's size: a few hundred documents fill it.
const TMPFS_SIZE: &str = "2m";

/// Runs `case` in a child of this binary with a fresh tmpfs on its directory.
fn in_small_filesystem(test: &str, case: fn(&Path)) {
    if let Ok(dir) = std::env::var(CASE_DIR) {
        case(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut unshare = Command::new("unshare");
    if !is_root() {
        unshare.args(["--user", "--map-root-user"]);
    }
    let output = unshare
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(r#"mount -t tmpfs -o size={TMPFS_SIZE} ramen-store-test "$0" && exec "$@""#))
        .arg(dir.path())
        .arg(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_DIR, dir.path())
        .output()
        .expect("unshare (util-linux) runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the case failed in its namespace:\n{log}");
    // The child ran the case: libtest prints it passed (a filter matching nothing passes too).
    assert!(log.contains(&format!("test {test} ... ok")), "the case did not run:\n{log}");
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn mount(args: &[&str], dir: &Path) {
    let status = Command::new("mount").args(args).arg(dir).status().expect("mount runs");
    assert!(status.success(), "mount {args:?} {}", dir.display());
}

/// A document of about 2 KiB, so the tmpfs fills after a few hundred.
fn document(n: usize) -> Value {
    json!({"email": format!("user{n}@example.com"), "n": n, "pad": "x".repeat(2000)})
}

fn users() -> CollectionSpec {
    CollectionSpec::new("users").unique("by_email", ["email"])
}

/// Every acknowledged document is there, unchanged, and the unique index still holds.
async fn assert_all_there(store: &EmbeddedStore, acked: &[(String, Value)]) {
    for (id, doc) in acked {
        let stored = store.get("users", id).await.unwrap();
        assert_eq!(stored.map(|s| s.doc).as_ref(), Some(doc), "{id} survives");
    }
    assert_eq!(store.count("users", &Filter::new()).await.unwrap(), acked.len() as u64);
    let taken = store.insert("users", "again", &document(0)).await.unwrap_err();
    assert!(matches!(taken, StoreError::UniqueViolation { .. }), "{taken:?}");
}

fn store_file(dir: &Path) -> PathBuf {
    dir.join("store").join(ramen_store::EMBEDDED_FILE_NAME)
}

#[test]
fn a_full_disk_is_a_clear_error_loses_nothing_and_heals_once_space_is_freed() {
    in_small_filesystem(
        "a_full_disk_is_a_clear_error_loses_nothing_and_heals_once_space_is_freed",
        |dir| {
            runtime().block_on(async {
                // Ballast that is deleted later, standing for whatever else filled the disk.
                let ballast = dir.join("ballast");
                std::fs::write(&ballast, vec![0u8; 512 * 1024]).unwrap();
                let store = EmbeddedStore::open(dir.join("store")).await.unwrap();
                store.ensure_collection(&users()).await.unwrap();
                let mut acked = Vec::new();
                let full = loop {
                    let n = acked.len();
                    assert!(n < 10_000, "2 MiB never filled up");
                    let (id, doc) = (format!("u{n}"), document(n));
                    match store.insert("users", &id, &doc).await {
                        Ok(_) => acked.push((id, doc)),
                        Err(err) => break err,
                    }
                };
                assert!(acked.len() > 10, "some documents fit first: {}", acked.len());
                let message = full.to_string();
                let file = store_file(dir).display().to_string();
                assert!(
                    message.contains("No space left on device") && message.contains(&file),
                    "the error names the cause and the file: {message}"
                );
                assert!(full.is_retryable(), "the same write succeeds once space is freed");
                // Reads go on: the file is reopened, and reading needs no space.
                let first = store.get("users", "u0").await.expect("a read while the disk is full");
                assert_eq!(first.map(|s| s.doc), Some(document(0)));
                // While the disk stays full, calls keep failing clearly; none hangs or panics.
                for n in 0..3 {
                    let again = store.insert("users", "later", &document(100_000 + n)).await;
                    let err = again.expect_err("the disk is still full");
                    assert!(
                        err.to_string().contains(&file),
                        "a later error names the file too: {err}"
                    );
                    assert!(err.is_retryable(), "{err}");
                }

                std::fs::remove_file(&ballast).unwrap();
                // The same store (no restart) writes again once there is space.
                let healed = store.insert("users", "after", &document(200_000)).await;
                healed.expect("a write succeeds once space is freed");
                acked.push(("after".into(), document(200_000)));
                assert_all_there(&store, &acked).await;
                drop(store);

                let reopened = EmbeddedStore::open(dir.join("store")).await.unwrap();
                assert_all_there(&reopened, &acked).await;
            })
        },
    );
}

#[test]
fn a_read_only_disk_is_refused_clearly_and_loses_nothing() {
    in_small_filesystem("a_read_only_disk_is_refused_clearly_and_loses_nothing", |dir| {
        runtime().block_on(async {
            let acked: Vec<_> = (0..20).map(|n| (format!("u{n}"), document(n))).collect();
            {
                let store = EmbeddedStore::open(dir.join("store")).await.unwrap();
                store.ensure_collection(&users()).await.unwrap();
                for (id, doc) in &acked {
                    store.insert("users", id, doc).await.unwrap();
                }
            }
            mount(&["-o", "remount,ro"], dir);
            let refused = EmbeddedStore::open(dir.join("store")).await.unwrap_err();
            let message = refused.to_string();
            assert!(
                message.contains("Read-only file system")
                    && message.contains(&store_file(dir).display().to_string()),
                "the error names the cause and the file: {message}"
            );
            assert!(refused.is_retryable(), "opening succeeds once it is writable again");

            mount(&["-o", "remount,rw"], dir);
            let store = EmbeddedStore::open(dir.join("store")).await.unwrap();
            assert_all_there(&store, &acked).await;
        })
    });
}
