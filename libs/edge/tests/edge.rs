//! The edge in front of real worker nodes (two "zones", each one node with the Python runtime).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ramen_edge::{
    Blocked, Directory, DirectoryError, Edge, EdgeRoute, EdgeSettings, Route, SessionSealer,
    StaticDirectory, WorkerRoute, ZoneRoute, router,
};
use ramen_lifecycle::{Routes, serve_http};
use ramen_node_contract::key_hash as hash_key;
use ramen_runner::{PolicyConfig, Worker};
use ramen_telemetry::Metrics;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

const KEY: &str = "rk_edge_test";

async fn node(dir: &Path, zone: &str, ip_allow: &[&str], repo: &str) -> Worker {
    let policy = PolicyConfig {
        require_key: true,
        key_hashes: vec![hash_key(KEY).into()],
        trusted_proxies: vec!["127.0.0.1/32".into()],
        ip_allow: ip_allow.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    support::start_node(dir, zone, repo, policy).await
}

struct Setup {
    edge_url: String,
    metrics: ramen_telemetry::Metrics,
    directory: Arc<StaticDirectory>,
    a: Option<Worker>,
    b: Option<Worker>,
    _dirs: (TempDir, TempDir),
}

fn zone_route(zone: &str, worker: &Worker, weight: u32, rules: &[&str]) -> ZoneRoute {
    ZoneRoute {
        hosting_only: Vec::new(),
        zone: zone.into(),
        ip_allow: rules.iter().map(|r| r.parse().unwrap()).collect(),
        unparsable_ip_rules: Vec::new(),
        workers: vec![WorkerRoute {
            id: format!("{zone}-1"),
            address: worker.mcp_addr.to_string(),
            local: worker.mcp_local.clone(),
            weight,
        }],
    }
}

async fn setup(node_rules: &[&str]) -> Setup {
    setup_on("examples/hello-repo", node_rules).await
}

async fn setup_on(repo: &str, node_rules: &[&str]) -> Setup {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = tokio::join!(
        node(da.path(), "a", node_rules, repo),
        node(db.path(), "b", node_rules, repo)
    );
    let directory = Arc::new(StaticDirectory::default());
    directory.set(
        "g",
        "prod",
        Route { zones: vec![zone_route("a", &a, 50, &[]), zone_route("b", &b, 50, &[])] },
    );
    let (edge_url, metrics) = serve_edge(directory.clone()).await;
    Setup { edge_url, metrics, directory, a: Some(a), b: Some(b), _dirs: (da, db) }
}

/// An edge on `directory`, on a port the kernel picks: its MCP URL for `g/prod`, its metrics.
async fn serve_edge(directory: Arc<dyn Directory>) -> (String, Metrics) {
    let edge = Arc::new(Edge::new(
        directory,
        SessionSealer::from_secret(b"test"),
        EdgeSettings {
            max_body_bytes: 64 * 1024,
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            ..Default::default()
        },
    ));
    let metrics = ramen_telemetry::Metrics::default();
    edge.register_metrics(&metrics);
    // As the gateway serves it: the MCP paths ahead of the router (tests/oauth.rs serves the
    // router alone).
    let routes = Routes::with_fast_route(router(edge.clone()), EdgeRoute::new(edge));
    let (addr, _server) =
        serve_http("127.0.0.1:0".parse().unwrap(), routes, CancellationToken::new()).await.unwrap();
    (format!("http://{addr}/mcp/g/prod"), metrics)
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
        self.post_bytes(body.to_string().into_bytes())
    }

    fn post_bytes(&self, body: Vec<u8>) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body);
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
    // An id that is not even text names no session either: 404, not a placement as if none
    // had been sent.
    client.session = None;
    let not_text = http::HeaderValue::from_bytes(b"s\xff").unwrap();
    let body = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    let response = client.post(body).header("mcp-session-id", not_text).send().await.unwrap();
    assert_eq!(response.status(), 404);
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

/// A worker on the edge's host is reached over its abstract socket, where the edge connects
/// first: here its TCP address refuses every connection, and its calls still go through. A
/// socket name no one serves (the node restarted under another) is passed over for TCP.
#[tokio::test]
async fn a_worker_on_this_host_is_reached_over_its_socket_and_over_tcp_when_that_is_gone() {
    let setup = setup(&[]).await;
    let a = setup.a.as_ref().unwrap();
    assert!(a.mcp_local.as_deref().is_some_and(|l| l.starts_with("@ramen/node/")));
    // A port bound and never listened on: every connection to it is refused.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let refusing = closed.local_addr().unwrap().to_string();
    assert!(tokio::net::TcpStream::connect(&refusing).await.is_err());
    let route = |address: String, local: Option<String>| Route {
        zones: vec![ZoneRoute {
            workers: vec![WorkerRoute { id: "a-1".into(), address, local, weight: 1 }],
            ..zone_route("a", a, 100, &[])
        }],
    };

    setup.directory.set("g", "prod", route(refusing, a.mcp_local.clone()));
    let mut client = Client::new(&setup.edge_url);
    assert_eq!(client.initialize(None).await.status(), 200);
    let answer: Value = client.add(40, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 42, "{answer}");

    let gone = Some("@ramen/node/gone".to_owned());
    setup.directory.set("g", "prod", route(a.mcp_addr.to_string(), gone));
    let mut client = Client::new(&setup.edge_url);
    assert_eq!(client.initialize(None).await.status(), 200);
    let answer: Value = client.add(40, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 42, "{answer}");
}

#[tokio::test]
async fn a_draining_worker_hands_new_sessions_to_the_next() {
    let setup = setup(&[]).await;
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    a.node.start_draining();
    for _ in 0..10 {
        let mut client = Client::new(&setup.edge_url);
        let status = client.initialize(None).await.status();
        assert_eq!(status, 200, "zone a's node refuses new sessions (503): b takes them");
    }
    assert_eq!((a.node.sessions.len(), b.node.sessions.len()), (0, 10));
}

/// The edge closes a connection it keeps idle to a worker before the worker would (a node
/// closes a kept-alive connection whose next request has not come within its header timeout): a
/// request the edge sends on a connection just as the node closes it is lost, and the edge
/// cannot tell whether it ran, so it cannot send it to another worker.
#[tokio::test]
async fn the_edge_closes_an_idle_worker_connection_before_the_worker_does() {
    let setup = setup(&[]).await;
    let a = setup.a.as_ref().unwrap();
    let mut client = Client::new(&setup.edge_url);
    assert_eq!(client.initialize(Some("a")).await.status(), 200);
    assert_eq!(client.add(1, 2).await.status(), 200);
    assert!(a.open_connections() >= 1, "the edge keeps its connection for the next request");
    ramen_testkit::eventually(
        "the edge closed its idle connection to the worker",
        ramen_lifecycle::HEADER_READ_TIMEOUT / 2,
        || async { if a.open_connections() == 0 { Ok(()) } else { Err(a.open_connections()) } },
    )
    .await;
    let answer: Value = client.add(40, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 42, "then a fresh one: {answer}");
}

/// What the edge's gRPC directory does, in small: answers from its cache until invalidated.
#[derive(Default)]
struct CachingDirectory {
    control_plane: StaticDirectory,
    cached: parking_lot::Mutex<Option<Arc<Route>>>,
}

#[async_trait::async_trait]
impl Directory for CachingDirectory {
    async fn route(&self, group: &str, environment: &str) -> Result<Arc<Route>, DirectoryError> {
        if let Some(route) = self.cached.lock().clone() {
            return Ok(route);
        }
        let fresh = self.control_plane.route(group, environment).await?;
        *self.cached.lock() = Some(fresh.clone());
        Ok(fresh)
    }

    fn invalidate(&self, _group: &str, _environment: &str) {
        *self.cached.lock() = None;
    }
}

#[tokio::test]
async fn a_stale_route_is_fetched_again_when_none_of_its_workers_takes_a_request() {
    let mut setup = setup(&[]).await;
    let a = setup.a.take().unwrap();
    let directory = Arc::new(CachingDirectory::default());
    let only = |worker: &Worker| Route { zones: vec![zone_route("a", worker, 100, &[])] };
    directory.control_plane.set("g", "prod", only(&a));
    let (url, _metrics) = serve_edge(directory.clone()).await;
    assert_eq!(Client::new(&url).initialize(None).await.status(), 200, "the route is cached");

    // Zone a's worker is replaced (a restart in a deploy: a new process, a new address) while
    // the edge still holds the route to the old one.
    a.stop_now().await;
    directory.control_plane.set("g", "prod", only(setup.b.as_ref().unwrap()));
    for _ in 0..3 {
        let mut client = Client::new(&url);
        assert_eq!(client.initialize(None).await.status(), 200, "served on the fresh route");
        assert_eq!(client.add(1, 2).await.status(), 200);
    }
}

#[tokio::test]
async fn a_worker_that_stops_taking_sessions_still_answers_the_ones_it_holds() {
    let setup = setup(&[]).await;
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    let mut held = Client::new(&setup.edge_url);
    assert_eq!(held.initialize(Some("a")).await.status(), 200);
    // Zone a's node stops taking sessions (a canary that stood in while stable restarted, now
    // that stable is back; or a draining node): b takes the zone's new ones.
    let moved = ZoneRoute {
        workers: zone_route("a", b, 100, &[]).workers,
        hosting_only: zone_route("a", a, 100, &[]).workers,
        ..zone_route("a", a, 100, &[])
    };
    setup.directory.set("g", "prod", Route { zones: vec![moved] });
    let answer: Value = held.add(40, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 42, "still served: {answer}");
    let mut new = Client::new(&setup.edge_url);
    assert_eq!(new.initialize(Some("a")).await.status(), 200);
    assert_eq!((a.node.sessions.len(), b.node.sessions.len()), (1, 1));
    // A worker the zone no longer lists at all is gone for its sessions.
    setup.directory.set("g", "prod", Route { zones: vec![zone_route("a", b, 100, &[])] });
    assert_eq!(held.add(1, 1).await.status(), 404);
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

fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}})
}

/// HAProxy adds its own `X-Forwarded-For` line: a client's first line must not become its
/// address. Failed before the shared rule (the edge read only the first line: 200).
#[tokio::test]
async fn a_second_forwarded_line_cannot_smuggle_an_allowed_address() {
    let setup = setup(&[]).await;
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    let rules = ["10.9.9.9/32"];
    setup.directory.set(
        "g",
        "prod",
        Route { zones: vec![zone_route("a", a, 50, &rules), zone_route("b", b, 50, &rules)] },
    );
    let client = Client::new(&setup.edge_url);
    let one = client.post(initialize_body()).header("x-forwarded-for", "203.0.113.7");
    assert_eq!(one.send().await.unwrap().status(), 403);
    let two = client
        .post(initialize_body())
        .header("x-forwarded-for", "10.9.9.9")
        .header("x-forwarded-for", "203.0.113.7");
    let two = two.send().await.unwrap();
    assert_eq!(two.status(), 403, "the last line names the client: {:?}", two.text().await);
    let allowed = client.post(initialize_body()).header("x-forwarded-for", "10.9.9.9");
    assert_eq!(allowed.send().await.unwrap().status(), 200);
    for bad in ["10.9.9.9:4000", "unknown", "10.9.9.9, nonsense"] {
        let refused = client.post(initialize_body()).header("x-forwarded-for", bad);
        let refused = refused.send().await.unwrap();
        assert_eq!(refused.status(), 400, "{bad}");
        let text = refused.text().await.unwrap();
        assert!(text.contains("X-Forwarded-For"), "{bad}: {text}");
    }
}

/// A zone whose IP rules the edge cannot parse is not served as if it had none.
/// Failed before (the rule was dropped and the empty list allowed everyone: 200).
#[tokio::test]
async fn a_zone_with_unparsable_ip_rules_is_refused_not_opened() {
    let setup = setup(&[]).await;
    let a = setup.a.as_ref().unwrap();
    let endpoints = ramen_proto::zone::v1::ZoneEndpoints {
        zone: "a".into(),
        ip_rules: vec!["10.0.0.0/33".into()],
        endpoints: vec![ramen_proto::zone::v1::Endpoint {
            worker_id: "a-1".into(),
            address: a.mcp_addr.to_string(),
            weight: 1,
            serving: true,
            ..Default::default()
        }],
    };
    let zones = ramen_edge::zone_routes(vec![endpoints]);
    setup.directory.set("g", "prod", Route { zones });
    let client = Client::new(&setup.edge_url);
    let refused = client.post(initialize_body()).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    let text = refused.text().await.unwrap();
    assert!(text.contains("IP rules cannot be read"), "{text}");
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

/// Bodies a hostile client sends to exhaust a parser, in a session and stateless: the edge
/// reads what it needs of them without following the nesting, each gets a 400 parse error
/// naming the problem, and the edge and the session go on serving.
#[tokio::test]
async fn deeply_nested_and_invalid_utf8_bodies_through_the_edge_are_parse_errors() {
    let setup = setup(&[]).await;
    let mut client = Client::new(&setup.edge_url);
    assert_eq!(client.initialize(None).await.status(), 200);
    let sessionless = Client::new(&setup.edge_url);
    // Deep enough for any recursive parser, within the test edge's 64 KiB body cap.
    let nested = |open: &str, close: &str, depth: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"notes.add","arguments":{}1{}}}}}"#,
            open.repeat(depth),
            close.repeat(depth)
        )
        .into_bytes()
    };
    let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"notes.shout","arguments":{"text":""#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
    bad_utf8.extend_from_slice(br#""}}}"#);
    let bodies = [
        ("20,000 nested arrays", nested("[", "]", 20_000)),
        ("8,000 nested objects", nested(r#"{"a":"#, "}", 8_000)),
        ("invalid UTF-8 in a string", bad_utf8),
    ];
    for stateless in [false, true] {
        for (what, body) in &bodies {
            let request = if stateless {
                sessionless
                    .post_bytes(body.clone())
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "notes.add")
            } else {
                client.post_bytes(body.clone())
            };
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            assert_eq!(
                (status, answer["error"]["code"].as_i64()),
                (400, Some(-32700)),
                "{what} (stateless: {stateless}): {answer}"
            );
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.starts_with("parse error: "), "{what}: {message}");
        }
    }
    let answer: Value = client.add(2, 2).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 4, "the session goes on: {answer}");
    let (status, answer) = stateless_add(&client, 9).await;
    assert_eq!(status, 200, "stateless calls go on: {answer}");
}

#[tokio::test]
async fn unknown_environment_is_404_and_requests_are_counted_per_group() {
    let setup = setup(&[]).await;
    let url = setup.edge_url.replace("/g/prod", "/nobody/staging");
    let mut client = Client::new(&url);
    assert_eq!(client.initialize(None).await.status(), 404);
    let mut known = Client::new(&setup.edge_url);
    assert_eq!(known.initialize(None).await.status(), 200);
    let text = setup.metrics.encode();
    assert!(text.contains("ramen_edge_requests_total{group=\"-\",status=\"404\"} 1"), "{text}");
    assert!(text.contains("ramen_edge_requests_total{group=\"g\",status=\"200\"}"), "{text}");
    assert!(!text.contains("nobody"), "an unknown name never becomes a series: {text}");
}

// -- MCP 2026-07-28: stateless requests ------------------------------------------------------

/// A stateless request as a conformant 2026-07-28 client sends it.
fn stateless(client: &Client, id: u64, method: &str, params: Value) -> reqwest::RequestBuilder {
    let name =
        params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_owned);
    stateless_named(client, id, method, params, name)
}

fn stateless_named(
    client: &Client,
    id: u64,
    method: &str,
    params: Value,
    mcp_name: Option<String>,
) -> reqwest::RequestBuilder {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut request = client
        .http
        .post(&client.url)
        .header(AUTHORIZATION, format!("Bearer {KEY}"))
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string());
    if let Some(name) = mcp_name {
        request = request.header("mcp-name", name);
    }
    request
}

async fn stateless_add(client: &Client, id: u64) -> (u16, Value) {
    let params = json!({"name": "notes.add", "arguments": {"a": 2, "b": 3}});
    let response = stateless(client, id, "tools/call", params).send().await.unwrap();
    let status = response.status().as_u16();
    assert!(response.headers().get("mcp-session-id").is_none(), "no session for stateless traffic");
    (status, response.json().await.unwrap_or(Value::Null))
}

/// How many `tools/call`s of package `notes` a node has answered (its request metric).
fn calls_served(worker: &Worker) -> u64 {
    let labels = ramen_runner::metrics::RequestLabels {
        method: "tools/call".into(),
        package: "notes".into(),
        outcome: "ok",
    };
    worker.node.metrics.requests.get_or_create(&labels).get()
}

#[tokio::test]
async fn stateless_requests_spread_by_weight_and_fail_over() {
    let mut setup = setup(&[]).await;
    let client = Client::new(&setup.edge_url);
    for id in 0..40 {
        let (status, answer) = stateless_add(&client, id).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["structuredContent"]["result"], 5, "{answer}");
        assert_eq!(answer["id"], id);
    }
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    let (on_a, on_b) = (calls_served(a), calls_served(b));
    assert_eq!(on_a + on_b, 40);
    assert!(
        on_a >= 5 && on_b >= 5,
        "50/50 weights spread requests without affinity: {on_a}/{on_b}"
    );
    assert_eq!(a.node.sessions.len() + b.node.sessions.len(), 0);

    // A draining node answers 503 (not processed): the edge moves the request on.
    a.node.start_draining();
    for id in 100..110 {
        assert_eq!(stateless_add(&client, id).await.0, 200, "zone a drains: b takes everything");
    }
    // A node that is gone does not answer at all: the same.
    setup.a.take().unwrap().stop_now().await;
    for id in 200..210 {
        assert_eq!(stateless_add(&client, id).await.0, 200, "zone a is down");
    }
    assert_eq!(calls_served(setup.b.as_ref().unwrap()), on_b + 20);
}

#[tokio::test]
async fn the_edge_refuses_a_blocked_tool_by_its_mcp_name() {
    let setup = setup(&[]).await;
    let client = Client::new(&setup.edge_url);
    // Blocked on the environment (the deployer's GetEnvironment), not yet on the nodes: the
    // answer can only come from the edge.
    setup.directory.set_blocked(
        "g",
        "prod",
        Blocked::new(["notes.add".to_owned(), "weather".to_owned()]),
    );
    let (status, answer) = stateless_add(&client, 7).await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64(), answer["id"].as_i64()),
        (200, Some(-32601), Some(7)),
        "{answer}"
    );
    let forecast = json!({"name": "weather.forecast", "arguments": {"city": "oslo"}});
    let answer: Value =
        stateless(&client, 8, "tools/call", forecast).send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32601, "a tool of a blocked package: {answer}");
    let (a, b) = (setup.a.as_ref().unwrap(), setup.b.as_ref().unwrap());
    assert_eq!(calls_served(a) + calls_served(b), 0, "no node saw the blocked calls");

    let divide = json!({"name": "notes.divide", "arguments": {"a": 6, "b": 3}});
    let answer: Value = stateless(&client, 9, "tools/call", divide.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 2.0, "other tools pass: {answer}");
    // A client lying in Mcp-Name to get past the edge is caught by the node (header ≠ body).
    let add = json!({"name": "notes.add", "arguments": {"a": 1, "b": 1}});
    let lying = stateless_named(&client, 10, "tools/call", add, Some("notes.divide".into()));
    let lying = lying.send().await.unwrap();
    assert_eq!(lying.status(), 400);
    // A session's requests are not judged by headers at the edge: the node decides.
    let mut session = Client::new(&setup.edge_url);
    assert_eq!(session.initialize(None).await.status(), 200);
    let answer: Value = session.add(1, 1).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"]["result"], 2, "{answer}");
}

#[tokio::test]
async fn listen_streams_pass_through_the_edge() {
    let setup = setup(&[]).await;
    let client = Client::new(&setup.edge_url);
    let params = json!({"notifications": {"toolsListChanged": true}});
    let response = stateless(&client, 1, "subscriptions/listen", params)
        .header("ramen-zone", "a")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    let mut next_event = async || -> String {
        use futures::StreamExt;
        loop {
            if let Some(end) = seen.find("\n\n") {
                let event: String = seen.drain(..end + 2).collect();
                if event.contains("data: ") {
                    return event;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(15), stream.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    let ack = next_event().await;
    assert!(ack.contains("notifications/subscriptions/acknowledged"), "{ack}");
    let a = setup.a.as_ref().unwrap();
    let mut policy = a.config.policy.clone();
    policy.blocked = vec!["notes".into()];
    a.update_policy(policy).unwrap();
    let change = next_event().await;
    assert!(
        change.contains("notifications/tools/list_changed"),
        "unbuffered through the edge: {change}"
    );
}

#[tokio::test]
async fn a_retry_answering_a_question_goes_to_the_node_that_asked() {
    let mut setup = setup_on("services/runner/tests/fixtures/conformance-repo", &[]).await;
    let client = Client::new(&setup.edge_url);
    let caps = json!({"elicitation": {}});
    let ask = |id: u64, extra: Value| {
        let mut params = json!({"name": "test_elicitation", "arguments": {"message": "Who?"}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let mut request = stateless(&client, id, "tools/call", params.clone());
        // The envelope with the elicitation capability (stateless() declares none).
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        request = request.body(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}).to_string(),
        );
        request
    };
    // Placement is drawn by weight, so rounds go on until both nodes have held a call (eight
    // rounds alone left it on one node once in 128 runs); 64 make that chance 2^-63.
    let mut holders = std::collections::HashSet::new();
    for round in 0..64u64 {
        if round >= 8 && holders.len() == 2 {
            break;
        }
        let first: Value = ask(round * 2, json!({})).send().await.unwrap().json().await.unwrap();
        let asked = &first["result"];
        assert_eq!(asked["resultType"], "input_required", "{first}");
        let state = asked["requestState"].as_str().unwrap().to_owned();
        holders.insert(state.rsplit('.').next().unwrap().to_owned());
        let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
        let answer = json!({"action": "accept", "content": {"username": "ada", "email": "e"}});
        let retry = json!({"requestState": state, "inputResponses": {key: answer}});
        let done: Value = ask(round * 2 + 1, retry).send().await.unwrap().json().await.unwrap();
        let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("ada"), "the retry reached the node holding the call: {done}");
    }
    assert_eq!(holders.len(), 2, "first rounds are spread over both nodes: {holders:?}");

    // The node holding the call is gone: the edge says so instead of guessing another.
    let first: Value =
        ask(100, json!({})).header("ramen-zone", "a").send().await.unwrap().json().await.unwrap();
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state.ends_with(".a-1"), "{state}");
    setup.a.take().unwrap().stop_now().await;
    let retry = json!({"requestState": state, "inputResponses": {}});
    let gone: Value = ask(101, retry).send().await.unwrap().json().await.unwrap();
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert_eq!(gone["id"], 101);
}
