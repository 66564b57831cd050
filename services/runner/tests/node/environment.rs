//! A snapshot's environment, built once and reused: the builder installs requirements.txt
//! into an archive in the blob store (found the second time: nothing installed), and a node
//! given the snapshot with its environment loads it with the package index unreachable —
//! it never runs pip.

use std::path::Path;
use std::sync::Arc;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_node_contract::environment::BuildSpec;
use ramen_runner::build_env;
use serde_json::json;

use crate::support::{self, python, repo_root, site_packages};
use crate::transport::Raw;

/// A pure-Python wheel of `ramen_env_fixture` (one function), made with the standard library:
/// a requirement pip can only get from this file, never from an index.
fn fixture_wheel(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("wheels")).unwrap();
    let wheel = dir.join("wheels/ramen_env_fixture-1.0-py3-none-any.whl");
    let script = r#"
import sys, zipfile, hashlib, base64
path = sys.argv[1]
files = {
    "ramen_env_fixture/__init__.py": "def answer():\n    return 'from the built environment'\n",
    "ramen_env_fixture-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: ramen-env-fixture\nVersion: 1.0\n",
    "ramen_env_fixture-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: ramen-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(path, "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("ramen_env_fixture-1.0.dist-info/RECORD,,")
    z.writestr("ramen_env_fixture-1.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let status = std::process::Command::new(python())
        .args(["-c", script])
        .arg(&wheel)
        .status()
        .expect("python runs");
    assert!(status.success(), "the fixture wheel was made");
    wheel
}

/// hello-repo with a tool that imports the fixture package, and requirements naming it (pip
/// finds it in the wheel directory the operator's pip arguments name: [`pip_args`]).
fn tree(dir: &Path) -> std::path::PathBuf {
    let tree = dir.join("tree");
    copy(&repo_root().join("examples/hello-repo"), &tree);
    let requirements = "mcp==2.3.0\nramen-env-fixture==1.0\n";
    std::fs::write(tree.join("requirements.txt"), requirements).unwrap();
    let notes = tree.join("notes/__init__.py");
    let mut text = std::fs::read_to_string(&notes).unwrap();
    text.push_str(
        "\n\n@mcp.tool()\ndef fixture() -> str:\n    \"\"\"From the environment.\"\"\"\n    import ramen_env_fixture\n    return ramen_env_fixture.answer()\n",
    );
    std::fs::write(notes, text).unwrap();
    tree
}

/// No index; the fixture wheel's directory as the operator's find-links.
fn pip_args(wheel: &Path) -> Vec<String> {
    let wheels = wheel.parent().unwrap().display().to_string();
    vec!["--no-index".into(), "--find-links".into(), wheels]
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn built_once_found_again_and_loaded_with_the_index_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let blob = LocalDirStore::open(dir.path().join("blobs")).unwrap();
    let wheel = fixture_wheel(dir.path());
    let tree = tree(dir.path());
    let snapshot = support::snapshot(&blob, &tree, "c0ffee2").await;
    let spec = BuildSpec {
        group: "test".into(),
        snapshot: snapshot.clone(),
        blob: ramen_runner::BlobConfig { dir: Some(dir.path().join("blobs")), s3: None },
        python: python(),
        site_packages: vec![site_packages()],
        pip_args: pip_args(&wheel),
        workdir: dir.path().join("build"),
        ..BuildSpec::default()
    };
    let store: Arc<dyn BlobStore> = Arc::new(blob.clone());
    let first = build_env::build(&spec, store.clone()).await;
    assert_eq!(first.error, None, "{:?}", first.log);
    assert!(first.built, "installed the first time");
    let environment = first.environment.clone().expect("an environment");
    assert!(environment.location.starts_with("groups/test/environments/"), "{environment:?}");
    assert!(blob.exists(&environment.location).await.unwrap());

    let second = build_env::build(&spec, store).await;
    assert_eq!(second.environment, Some(environment.clone()), "the same requirements: found");
    assert!(!second.built && second.log.is_empty(), "nothing installed again: {second:?}");

    // A node whose pip would fail (an index nothing listens on) loads it: it never runs pip.
    let node = support::start("examples/hello-repo", |config| {
        config.blob = ramen_runner::BlobConfig { dir: Some(dir.path().join("blobs")), s3: None };
        config.pip_args = vec!["--index-url".into(), "http://127.0.0.1:9/simple".into()];
        config.snapshot = Some(ramen_runner::SnapshotRef {
            environment: Some(environment.clone()),
            ..snapshot.clone()
        });
    })
    .await;
    let mut raw = Raw::new(&node.url);
    raw.initialize().await;
    let answer = raw.call(1, "tools/call", json!({"name": "notes.fixture", "arguments": {}})).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "from the built environment",
        "{answer}"
    );
    let work = node.dir.path().join("work");
    assert!(work.join("environments").join(&environment.digest).is_dir(), "unpacked by digest");
    assert!(!work.join("venv/.ramen-requirements.sha256").exists(), "pip never ran on the node");
    node.stop().await;
}

#[tokio::test]
async fn a_requirement_that_cannot_be_installed_is_named_with_pips_output() {
    let dir = tempfile::tempdir().unwrap();
    let blob = LocalDirStore::open(dir.path().join("blobs")).unwrap();
    let tree = dir.path().join("tree");
    copy(&repo_root().join("examples/hello-repo"), &tree);
    std::fs::write(tree.join("requirements.txt"), "ramen-no-such-package-anywhere==9.9.9\n")
        .unwrap();
    let snapshot = support::snapshot(&blob, &tree, "bad").await;
    let spec = BuildSpec {
        group: "test".into(),
        snapshot,
        blob: ramen_runner::BlobConfig { dir: Some(dir.path().join("blobs")), s3: None },
        python: python(),
        site_packages: vec![site_packages()],
        pip_args: vec!["--no-index".into()],
        workdir: dir.path().join("build"),
        ..BuildSpec::default()
    };
    let outcome = build_env::build(&spec, Arc::new(blob)).await;
    let error = outcome.error.expect("the install failed");
    assert!(error.contains("ramen-no-such-package-anywhere==9.9.9"), "{error}");
    assert!(outcome.log.iter().any(|l| l.contains("ERROR")), "{:?}", outcome.log);
    assert_eq!(outcome.environment, None);
}

/// pip runs the requirements' own build code, so it is confined like the workers: a
/// requirement naming a file outside the build (here a wheel the operator's arguments do not
/// name) is refused, although the same file installs with the sandbox off.
#[tokio::test]
async fn a_requirement_naming_a_file_elsewhere_on_the_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let blob = LocalDirStore::open(dir.path().join("blobs")).unwrap();
    let wheel = fixture_wheel(dir.path());
    let tree = tree(dir.path());
    let requirements = format!("ramen-env-fixture @ file://{}\n", wheel.display());
    std::fs::write(tree.join("requirements.txt"), requirements).unwrap();
    let snapshot = support::snapshot(&blob, &tree, "elsewhere").await;
    let spec = |enabled: bool| BuildSpec {
        group: "test".into(),
        snapshot: snapshot.clone(),
        blob: ramen_runner::BlobConfig { dir: Some(dir.path().join("blobs")), s3: None },
        python: python(),
        site_packages: vec![site_packages()],
        pip_args: vec!["--no-index".into()],
        workdir: dir.path().join("build"),
        sandbox: ramen_node_contract::SandboxConfig { enabled, ..Default::default() },
    };
    let store: Arc<dyn BlobStore> = Arc::new(blob.clone());
    // Confined first: an environment built unconfined would be found and reused.
    let confined = build_env::build(&spec(true), store.clone()).await;
    let error = confined.error.expect("the confined install failed");
    assert!(error.contains("Permission denied") && error.contains("ramen_env_fixture"), "{error}");
    let unconfined = build_env::build(&spec(false), store).await;
    assert_eq!(unconfined.error, None, "the same install works unconfined: {:?}", unconfined.log);
}
