//! Reload: pip runs only when `requirements.txt` changes, a failing install is reported with
//! pip's output, a package that fails to import is named with its traceback, and a snapshot
//! whose digest does not match is refused.

use std::path::Path;

use ramen_blob::BlobStore;
use ramen_runner::SnapshotRef;
use ramen_runner::reload::ReloadError;
use serde_json::json;

use crate::support::{self, TestNode};
use crate::transport::Raw;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A commit of hello-repo with `requirements.txt` (and a marker file) as given.
async fn commit(node: &TestNode, commit: &str, requirements: &str) -> SnapshotRef {
    let tree = node.dir.path().join("trees").join(commit);
    copy_dir(&support::repo_root().join("examples/hello-repo"), &tree);
    std::fs::write(tree.join("requirements.txt"), requirements).unwrap();
    std::fs::write(tree.join("COMMIT"), commit).unwrap();
    support::snapshot(&node.blob, &tree, commit).await
}

async fn add(node: &TestNode) -> serde_json::Value {
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;
    raw.call(1, "tools/call", json!({"name":"notes.add","arguments":{"a":20,"b":22}})).await
}

#[tokio::test]
async fn pip_runs_only_when_requirements_change() {
    // The node makes its own venv (with pip) here. Offline: everything hello-repo needs is
    // already visible through the test venv.
    let node = support::start_fresh("examples/hello-repo", |config| {
        config.pip_args = vec!["--no-index".into()]
    })
    .await;
    assert!(node.dir.path().join("work/venv/bin/pip").exists(), "the node created a venv with pip");
    let worker = node.worker();
    let original =
        std::fs::read_to_string(support::repo_root().join("examples/hello-repo/requirements.txt"))
            .unwrap();

    let same = worker.reload(&commit(&node, "c2", &original).await).await.unwrap();
    assert!(!same.pip_ran, "same requirements.txt as the loaded commit");
    assert_eq!(worker.node.loaded_commit(), "c2");
    assert!(same.root.join("COMMIT").exists(), "the new commit is what runs");

    let changed = format!("# pinned for the example\n{original}");
    let reloaded = worker.reload(&commit(&node, "c3", &changed).await).await.unwrap();
    assert!(reloaded.pip_ran, "a changed requirements.txt is installed");

    let broken = commit(&node, "c4", "ramen-no-such-distribution==9.9.9\n").await;
    let err = worker.reload(&broken).await.err().expect("the install fails");
    assert!(matches!(err, ReloadError::Pip { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("pip install"), "names pip: {message}");
    assert!(message.contains("ramen-no-such-distribution"), "carries pip's output: {message}");
    assert_eq!(worker.node.loaded_commit(), "c3", "a failed reload leaves the node as it was");
    assert_eq!(add(&node).await["result"]["structuredContent"]["result"], 42);

    let again = worker.reload(&commit(&node, "c5", &changed).await).await.unwrap();
    assert!(!again.pip_ran, "the failed install did not count as installed");
    node.stop().await;
}

#[tokio::test]
async fn a_package_that_fails_to_import_is_reported_and_the_rest_serves() {
    let node = support::start("services/runner/tests/fixtures/broken-repo", |_| {}).await;
    let tree = support::repo_root().join("services/runner/tests/fixtures/broken-repo");
    let reloaded =
        node.worker().reload(&support::snapshot(&node.blob, &tree, "b2").await).await.unwrap();
    let errors = reloaded.report.load_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (package, error) = errors[0];
    assert_eq!(package, "bad");
    assert!(
        error.message.contains("ramen_fixture_module_that_does_not_exist"),
        "{}",
        error.message
    );
    assert!(
        error.traceback.contains("Traceback") && error.traceback.contains("ModuleNotFoundError"),
        "{}",
        error.traceback
    );

    let mut raw = Raw::new(&node.url);
    raw.initialize().await;
    let tools = raw.call(1, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["good.echo", "good.chatty"]);
    let echo = raw
        .call(2, "tools/call", json!({"name":"good.chatty","arguments":{"text":"still here"}}))
        .await;
    assert_eq!(echo["result"]["structuredContent"]["result"], "still here", "{echo}");
    node.stop().await;
}

#[tokio::test]
async fn a_snapshot_whose_digest_does_not_match_is_refused() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let worker = node.worker();
    let good = commit(&node, "d2", "mcp==2.3.0\n").await;

    let wrong_digest = SnapshotRef { digest: "0".repeat(64), ..good.clone() };
    let err = worker.reload(&wrong_digest).await.err().expect("refused");
    assert!(matches!(err, ReloadError::DigestMismatch { .. }), "{err:?}");

    // The blob itself altered after the digest was taken.
    let tampered = commit(&node, "d3", "mcp==2.3.0\n").await;
    let other = node.blob.get(&good.key).await.unwrap().unwrap();
    node.blob.put(&tampered.key, other).await.unwrap();
    let err = worker.reload(&tampered).await.err().expect("refused");
    assert!(matches!(err, ReloadError::DigestMismatch { .. }), "{err:?}");
    assert!(err.to_string().contains(&tampered.digest), "names the expected digest: {err}");

    assert_eq!(worker.node.loaded_commit(), "c0ffee1", "still on the commit it had");
    assert!(!node.dir.path().join("work/snapshots/d3").exists(), "nothing unpacked");
    assert_eq!(add(&node).await["result"]["structuredContent"]["result"], 42);
    node.stop().await;
}
