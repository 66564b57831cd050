//! The edge in front of real worker nodes (two "zones", each one node with the Python runtime).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ramen_blob::{BlobStore, LocalDirStore};
use ramen_edge::{
    Edge, EdgeSettings, Route, SessionSealer, StaticDirectory, WorkerRoute, ZoneRoute, router,
};
use ramen_node_contract::archive::pack_dir;
use ramen_node_contract::key_hash as hash_key;
use ramen_runner::{BlobConfig, NodeConfig, PolicyConfig, SnapshotRef, Worker};
use ramen_telemetry::Metrics;
use ramen_testkit::workers::{python, site_packages};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

const KEY: &str = "rk_edge_test";

async fn node(dir: &Path, zone: &str, ip_allow: &[&str]) -> Worker {
    let blob = LocalDirStore::open(dir.join("blobs")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-repo");
    let archive = pack_dir(&repo).unwrap();
    let digest = hex::encode(Sha256::digest(&archive));
    let key = "groups/g/snapshots/c1.tar.gz".to_owned();
    blob.put(&key, archive.into()).await.unwrap();
    let config = NodeConfig {
        node_id: format!("{zone}-1"),
        group: "g".into(),
        zone: zone.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        admin: "127.0.0.1:0".parse().unwrap(),
        grpc: "127.0.0.1:0".parse().unwrap(),
        workdir: dir.join("work"),
        python: python(),
        site_packages: vec![site_packages()],
        blob: BlobConfig { dir: Some(dir.join("blobs")), s3: None },
        snapshot: Some(SnapshotRef { commit: "c1".into(), key, digest, environment: None }),
        policy: PolicyConfig {
            require_key: true,
            key_hashes: vec![hash_key(KEY)],
            trusted_proxies: vec!["127.0.0.1/32".into()],
            ip_allow: ip_allow.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
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

struct Setup {
    edge_url: String,
    directory: Arc<StaticDirectory>,
    a: Option<Worker>,
    b: Option<Worker>,
    _dirs: (TempDir, TempDir),
}

fn zone_route(zone: &str, worker: &Worker, weight: u32, rules: &[&str]) -> ZoneRoute {
    ZoneRoute {
        zone: zone.into(),
        ip_allow: rules.iter().map(|r| r.parse().unwrap()).collect(),
        workers: vec![WorkerRoute {
            id: format!("{zone}-1"),
            address: worker.mcp_addr.to_string(),
            weight,
        }],
    }
}

async fn setup(node_rules: &[&str]) -> Setup {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = tokio::join!(node(da.path(), "a", node_rules), node(db.path(), "b", node_rules));
    let directory = Arc::new(StaticDirectory::default());
    directory.set(
        "g",
        "prod",
        Route { zones: vec![zone_route("a", &a, 50, &[]), zone_route("b", &b, 50, &[])] },
    );
    let edge = Arc::new(Edge::new(
        directory.clone(),
        SessionSealer::from_secret(b"test"),
        EdgeSettings {
            max_body_bytes: 64 * 1024,
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            ..Default::default()
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router(edge).into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    Setup {
        edge_url: format!("http://{addr}/mcp/g/prod"),
        directory,
        a: Some(a),
        b: Some(b),
        _dirs: (da, db),
    }
}

struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Client {
    fn new(url: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.into(), session: None }
    }

    fn post(&self, body: Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    async fn initialize(&mut self, zone: Option<&str>) -> reqwest::Response {
        let mut request = self.post(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"edge-test","version":"0"}}}));
        if let Some(zone) = zone {
            request = request.header("ramen-zone", zone);
        }
        let response = request.send().await.unwrap();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_owned());
        }
        response
    }

    async fn add(&self, a: i64, b: i64) -> reqwest::Response {
        self.post(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes.add","arguments":{"a":a,"b":b}}}))
            .send()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn pinned_zone_sessions_stick_and_cannot_be_forged() {
    let setup = setup(&[]).await;
    let mut client = Client::new(&setup.edge_url);
    assert_eq!(client.initialize(Some("b")).await.status(), 200);
    let sealed = client.session.clone().unwrap();
    let b = setup.b.as_ref().unwrap();
    assert_eq!(b.node.sessions.len(), 1, "the session lives on zone b's node");
    assert_eq!(setup.a.as_ref().unwrap().node.sessions.len(), 0);
    assert!(
        !b.node.sessions.ids().iter().any(|id| sealed.contains(id.as_str())),
        "the client never sees the node's id"
    );

    let answer: Value = client.add(40, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 42, "{answer}");

    client.session = Some("forged-session-id".into());
    assert_eq!(client.add(1, 1).await.status(), 404);
    let mut unknown_zone = Client::new(&setup.edge_url);
    assert_eq!(unknown_zone.initialize(Some("c")).await.status(), 404);
}

#[tokio::test]
async fn unpinned_requests_fail_over_when_a_zone_is_down() {
    let mut setup = setup(&[]).await;
    setup.a.take().unwrap().stop_now().await;
    for _ in 0..6 {
        let mut client = Client::new(&setup.edge_url);
        assert_eq!(
            client.initialize(None).await.status(),
            200,
            "zone a is down: every new session lands on b"
        );
        assert_eq!(client.add(1, 2).await.status(), 200);
    }
    let mut pinned = Client::new(&setup.edge_url);
    assert_eq!(
        pinned.initialize(Some("a")).await.status(),
        503,
        "a pinned zone does not fail over"
    );
}

#[tokio::test]
async fn a_session_whose_node_is_gone_gets_404() {
    let mut setup = setup(&[]).await;
    let mut client = Client::new(&setup.edge_url);
    client.initialize(Some("a")).await;
    assert_eq!(client.add(1, 2).await.status(), 200);
    setup.a.take().unwrap().stop_now().await;
    assert_eq!(client.add(1, 2).await.status(), 404, "the client must initialize again");
    client.session = None; // as the MCP spec says: a new session, without the old id
    assert_eq!(client.initialize(None).await.status(), 200);
    assert_eq!(client.add(1, 2).await.status(), 200);
}

#[tokio::test]
async fn edge_applies_zone_ip_rules_and_forwards_the_client_address() {
    let setup = setup(&["203.0.113.0/24"]).await;
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    setup.directory.set(
        "g",
        "prod",
        Route { zones: vec![zone_route("a", a, 50, &["10.0.0.0/8"]), zone_route("b", b, 50, &[])] },
    );
    let mut client = Client::new(&setup.edge_url);
    let response = client.post(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}))
        .header("ramen-zone", "a")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403, "the edge refuses a client outside zone a's rules");

    // Zone b allows everyone at the edge; the node itself only allows 203.0.113.0/24 and sees
    // the forwarded address because the edge is its trusted proxy.
    let refused = client.initialize(Some("b")).await;
    assert_eq!(refused.status(), 403, "127.0.0.1 is outside the node's allow-list");
    let allowed = client
        .post(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}))
        .header("ramen-zone", "b")
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200, "the node saw 203.0.113.9 through the edge");
}

#[tokio::test]
async fn sse_streams_through_and_bodies_are_capped() {
    let setup = setup(&[]).await;
    let mut client = Client::new(&setup.edge_url);
    client.initialize(None).await;
    let response = client
        .post(json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"weather.survey","arguments":{"city":"Paris","steps":3},"_meta":{"progressToken":"p1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    let progress = text.find("notifications/progress").expect("progress events");
    let result = text.find("\"id\":7").expect("the result");
    assert!(progress < result, "progress precedes the result: {text}");

    let big = "x".repeat(100 * 1024);
    let response = client
        .post(json!({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"notes.shout","arguments":{"text":big}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test]
async fn unknown_environment_is_404() {
    let setup = setup(&[]).await;
    let url = setup.edge_url.replace("/prod", "/staging");
    let mut client = Client::new(&url);
    assert_eq!(client.initialize(None).await.status(), 404);
}
