//! What the edge's test binaries share: a real worker node (with its Python runtime) serving a
//! repo of this workspace as group `g`, zone `zone`, under `policy`, ready before it is returned.

use std::path::Path;
use std::time::Duration;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_node_contract::archive::pack_dir;
use ramen_runner::{BlobConfig, NodeConfig, PolicyConfig, SnapshotRef, Worker};
use ramen_telemetry::Metrics;
use ramen_testkit::workers::{python, site_packages};
use sha2::{Digest, Sha256};

pub async fn start_node(dir: &Path, zone: &str, repo: &str, policy: PolicyConfig) -> Worker {
    let blob = LocalDirStore::open(dir.join("blobs")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(repo);
    let archive = pack_dir(&repo).unwrap();
    let digest = hex::encode(Sha256::digest(&archive));
    let key = "groups/g/snapshots/c1.tar.gz".to_owned();
    blob.put(&key, archive.into()).await.unwrap();
    let config = NodeConfig {
        node_id: format!("{zone}-1"),
        group: "g".into(),
        zone: zone.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        // As a local zone's node: the edge reaches it over its abstract socket.
        listen_local: true,
        admin: "127.0.0.1:0".parse().unwrap(),
        grpc: "127.0.0.1:0".parse().unwrap(),
        workdir: dir.join("work"),
        python: python(),
        site_packages: vec![site_packages()],
        blob: BlobConfig { dir: Some(dir.join("blobs")), s3: None },
        snapshot: Some(SnapshotRef { commit: "c1".into(), key, digest, environment: None }),
        policy,
        ..Default::default()
    };
    let worker = Worker::start(config, Metrics::default()).await.unwrap();
    let node = worker.node.clone();
    ramen_testkit::eventually("node ready", Duration::from_secs(60), || {
        let node = node.clone();
        async move { if node.is_ready() { Ok(()) } else { Err(node.runtime.state()) } }
    })
    .await;
    worker
}
