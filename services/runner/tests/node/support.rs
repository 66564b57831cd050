//! Starts a real node (in-process) on a packed fixture repo, with the Python runtime from the
//! test virtualenv (`scripts/install-test-servers`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_node_contract::archive::pack_dir;
use ramen_node_contract::key_hash as hash_key;
use ramen_runner::node::Node;
use ramen_runner::policy::Policy;
use ramen_runner::{NodeConfig, PolicyConfig, SnapshotRef, Worker};
use ramen_telemetry::Metrics;
pub use ramen_testkit::workers::{python, repo_root, site_packages};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

pub const KEY: &str = "rk_test_0123456789";
/// The group and zone of every test node (its tickets' audience is `runner:test/local-a`).
pub const GROUP: &str = "test";
pub const ZONE: &str = "local-a";

/// The control plane of these tests: it signs the tickets a node takes, and derives the
/// node's placement key the way the zone-manager does.
pub fn control_plane() -> ramen_access::TicketKeys {
    ramen_access::TicketKeys::new(b"node-tests-control-plane-secret-0123", None)
}

/// A ticket for `audience`, as the zone-manager signs one.
pub fn ticket_for(audience: &str) -> String {
    let caller = ramen_access::Caller::acting_as(ramen_proto::metadata::ACTOR_ZONE_MANAGER);
    control_plane().sign(&caller, audience, ramen_access::ticket::now_ms())
}

/// A ticket this node takes.
pub fn ticket() -> String {
    ticket_for(&ramen_access::audience::runner(GROUP, ZONE))
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

    pub fn node(&self) -> Arc<Node> {
        self.worker().node.clone()
    }

    /// `http://<admin>/<path>` (`/readyz`, `/metrics`, `/status`).
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.worker().admin_addr)
    }

    pub async fn readyz(&self) -> u16 {
        reqwest::get(self.admin_url("/readyz")).await.unwrap().status().as_u16()
    }

    /// The value of one sample in `/metrics` (e.g. `ramen_runtime_restarts_total`), named
    /// without the group and zone every node series carries (which this checks are there).
    pub async fn metric(&self, sample: &str) -> Option<f64> {
        let text = reqwest::get(self.admin_url("/metrics")).await.unwrap().text().await.unwrap();
        const NODE_LABELS: &str = "group=\"test\",zone=\"local-a\"";
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                let bare = series
                    .replace(&format!("{{{NODE_LABELS}}}"), "")
                    .replace(&format!(",{NODE_LABELS}"), "")
                    .replace(&format!("{NODE_LABELS},"), "");
                (series.contains(NODE_LABELS) && bare == sample).then_some(value)
            })
            .find_map(|value| value.trim().parse().ok())
    }

    /// Applies a policy live, as the control plane's `UpdatePolicy` would: the test key stays
    /// valid, `change` adjusts the rest.
    pub fn set_policy(&self, change: impl FnOnce(&mut PolicyConfig)) {
        let mut config = self.worker().config.policy.clone();
        change(&mut config);
        self.worker().node.set_policy(Policy::compile(config).expect("valid policy"));
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
    SnapshotRef { commit: commit.into(), key, digest, environment: None }
}

pub fn base_config(dir: &Path) -> NodeConfig {
    NodeConfig {
        node_id: "node-1".into(),
        group: GROUP.into(),
        zone: ZONE.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        admin: "127.0.0.1:0".parse().unwrap(),
        grpc: "127.0.0.1:0".parse().unwrap(),
        workdir: dir.join("work"),
        python: python(),
        site_packages: vec![site_packages()],
        blob: ramen_runner::BlobConfig { dir: Some(dir.join("blobs")), s3: None },
        policy: PolicyConfig {
            require_key: true,
            key_hashes: vec![hash_key(KEY).into()],
            ..Default::default()
        },
        ticket_keys: control_plane()
            .audience(&ramen_access::audience::runner(GROUP, ZONE))
            .keys()
            .map(|k| ramen_node_contract::TicketKey::new(*k))
            .collect(),
        ..Default::default()
    }
}

/// Creates the node's virtualenv without pip (~40 ms instead of ~3 s of CPU for `ensurepip`):
/// the node keeps an existing venv, and `python -m pip` still works in it through the test
/// venv's site-packages on the `.pth` path the node writes.
fn precreate_venv(interpreter: &Path, workdir: &Path) {
    let status = std::process::Command::new(interpreter)
        .args(["-m", "venv", "--without-pip"])
        .arg(workdir.join("venv"))
        .status()
        .expect("test venv python runs");
    assert!(status.success(), "python -m venv --without-pip failed");
}

/// A ready node serving `repo` (e.g. "examples/hello-repo").
pub async fn start(repo: &str, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    start_with(repo, true, tweak).await
}

/// The interpreter of the compatibility virtualenv `name` (`fastmcp`, `mcp1`, `mcp2`,
/// `stdio`: one per file `scripts/compat/<name>.txt`). Missing or out of date fails the test
/// with the command that installs it — never a skip.
pub fn compat_python(name: &str) -> PathBuf {
    let cache = std::env::var_os("RAMEN_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ramen"));
    let venv = cache.join("compat").join(name);
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "no virtualenv {} for this test: run scripts/install-compat-servers",
        venv.display()
    );
    let pins = std::fs::read(repo_root().join(format!("scripts/compat/{name}.txt"))).unwrap();
    let stamp =
        std::fs::read_to_string(venv.join(".ramen-requirements.sha256")).unwrap_or_default();
    assert_eq!(
        stamp.trim(),
        hex::encode(Sha256::digest(&pins)),
        "the virtualenv {} does not match scripts/compat/{name}.txt: run scripts/install-compat-servers",
        venv.display()
    );
    python
}

/// A ready node serving `repo` with the compatibility virtualenv `venv` as its Python (its
/// packages are what the snapshot's requirements name).
pub async fn start_on(repo: &str, venv: &str, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    let python = compat_python(venv);
    let out = std::process::Command::new(&python)
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .expect("the compat python runs");
    let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    start_with_python(repo, true, (python, site), tweak).await
}

/// Like [`start`], but the node creates its virtualenv itself, as in production.
pub async fn start_fresh(repo: &str, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    start_with(repo, false, tweak).await
}

async fn start_with(repo: &str, precreate: bool, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    start_with_python(repo, precreate, (python(), site_packages()), tweak).await
}

async fn start_with_python(
    repo: &str,
    precreate: bool,
    (interpreter, site): (PathBuf, PathBuf),
    tweak: impl FnOnce(&mut NodeConfig),
) -> TestNode {
    let dir = tempfile::tempdir().unwrap();
    let blob = LocalDirStore::open(dir.path().join("blobs")).unwrap();
    let mut config = base_config(dir.path());
    config.python = interpreter;
    config.site_packages = vec![site];
    if precreate {
        precreate_venv(&config.python, &config.workdir);
    }
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
