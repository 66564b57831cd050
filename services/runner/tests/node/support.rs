//! Starts a real node (in-process) on a packed fixture repo, with the Python runtime from the
//! test virtualenv (`scripts/install-test-servers`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_runner::{NodeConfig, PolicyConfig, SnapshotRef, Worker, hash_key, pack_dir};
use ramen_telemetry::Metrics;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

pub const KEY: &str = "rk_test_0123456789";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The test virtualenv's interpreter (has the pinned `mcp` SDK).
pub fn python() -> PathBuf {
    let bin = std::env::var_os("RAMEN_TEST_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ramen/venv/bin"));
    bin.join("python")
}

/// The test virtualenv's site-packages, made visible to each node's own virtualenv so
/// `pip install -r requirements.txt` (mcp==2.3.0) is already satisfied offline.
pub fn site_packages() -> PathBuf {
    static SITE: OnceLock<PathBuf> = OnceLock::new();
    SITE.get_or_init(|| {
        let out = std::process::Command::new(python())
            .args(["-c", "import site; print(site.getsitepackages()[0])"])
            .output()
            .expect("test venv python runs");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
    .clone()
}

pub struct TestNode {
    pub worker: Option<Worker>,
    pub url: String,
    pub dir: TempDir,
    pub blob: LocalDirStore,
}

impl TestNode {
    pub fn worker(&self) -> &Worker {
        self.worker.as_ref().unwrap()
    }

    pub async fn stop(mut self) {
        if let Some(worker) = self.worker.take() {
            worker.stop_now().await;
        }
    }
}

/// Packs `repo` (relative to the repository root) into a fresh blob dir.
pub async fn snapshot(blob: &LocalDirStore, repo: &Path, commit: &str) -> SnapshotRef {
    let archive = pack_dir(repo).unwrap();
    let digest = hex::encode(Sha256::digest(&archive));
    let key = format!("groups/test/snapshots/{commit}.tar.gz");
    blob.put(&key, archive.into()).await.unwrap();
    SnapshotRef { commit: commit.into(), key, digest }
}

pub fn base_config(dir: &Path) -> NodeConfig {
    NodeConfig {
        node_id: "node-1".into(),
        group: "test".into(),
        zone: "local-a".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        admin: "127.0.0.1:0".parse().unwrap(),
        grpc: "127.0.0.1:0".parse().unwrap(),
        workdir: dir.join("work"),
        python: python(),
        site_packages: vec![site_packages()],
        blob: ramen_runner::BlobConfig { dir: Some(dir.join("blobs")), s3: None },
        policy: PolicyConfig { require_key: true, key_hashes: vec![hash_key(KEY)], ..Default::default() },
        ..Default::default()
    }
}

/// A ready node serving `repo` (e.g. "examples/hello-repo").
pub async fn start(repo: &str, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    let dir = tempfile::tempdir().unwrap();
    let blob = LocalDirStore::open(dir.path().join("blobs")).unwrap();
    let mut config = base_config(dir.path());
    config.snapshot = Some(snapshot(&blob, &repo_root().join(repo), "c0ffee1").await);
    tweak(&mut config);
    let worker = Worker::start(config, Metrics::default()).await.expect("node starts");
    let url = format!("http://{}/mcp", worker.mcp_addr);
    let node = worker.node.clone();
    ramen_testkit::eventually("node ready", Duration::from_secs(60), || {
        let node = node.clone();
        async move { if node.is_ready() { Ok(()) } else { Err(node.runtime.state()) } }
    })
    .await;
    TestNode { worker: Some(worker), url, dir, blob }
}
