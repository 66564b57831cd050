//! Rebalance on the local edge shifts measured traffic between workers: two real workers of
//! the real zone-manager behind the MCP edge of `libs/edge`; one worker is kept busy, Rebalance
//! moves its weight to the idle one, and the new sessions the edge routes follow the weights.
//!
//! The edge reads routes through a directory over the zone-manager's `ListEndpoints` (what the
//! gateway's `GrpcDirectory` does after asking the deployer for the environment's zones).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ramen_clients::{GrpcNode, NodeClient, NodeTarget, Signed};
use ramen_edge::{
    Directory, DirectoryError, Edge, EdgeSettings, Route, SessionSealer, router, zone_routes,
};
use ramen_proto::rebalancer::v1 as pb;
use ramen_proto::zone::v1::ListEndpointsRequest;
use ramen_proto::zone::v1::zone_service_client::ZoneServiceClient;
use ramen_testkit::eventually;
use serde_json::json;

use crate::support::Harness;
use crate::workers::KEY;

struct ZoneDirectory(ZoneServiceClient<Signed>);

#[async_trait::async_trait]
impl Directory for ZoneDirectory {
    async fn route(&self, group: &str, _environment: &str) -> Result<Arc<Route>, DirectoryError> {
        let request = ListEndpointsRequest {
            group: group.into(),
            zones: Vec::new(),
            ready_only: false,
            page: None,
        };
        let answer = self
            .0
            .clone()
            .list_endpoints(request)
            .await
            .map_err(|s| DirectoryError::Unavailable(s.message().into()))?;
        Ok(Arc::new(Route { zones: zone_routes(answer.into_inner().zones) }))
    }
}

async fn serve_edge(zones: ZoneServiceClient<Signed>) -> String {
    let edge = Arc::new(Edge::new(
        Arc::new(ZoneDirectory(zones)),
        SessionSealer::from_secret(b"test"),
        EdgeSettings::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router(edge).into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap()
    });
    format!("http://{addr}/mcp/team/prod")
}

/// POSTs one JSON-RPC message; returns the session id the answer carries and the body.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: serde_json::Value,
) -> (Option<String>, String) {
    let mut request = http
        .post(url)
        .bearer_auth(KEY)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(session) = session {
        request =
            request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let session =
        response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (session, response.text().await.unwrap())
}

async fn initialize(http: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rebalancer-test","version":"0"}}});
    let (session, _) = post(http, url, None, init).await;
    let session = session.expect("a session id");
    post(http, url, Some(&session), json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    session
}

/// The workers' admin APIs, called as the control plane does (tickets for `team`/`local-a`).
struct Admins {
    nodes: GrpcNode,
    addresses: Vec<String>,
}

/// `sessions` new sessions through the edge; how many landed on each worker (by the nodes' own
/// session counts).
async fn route_sessions(
    http: &reqwest::Client,
    edge: &str,
    admins: &Admins,
    sessions: usize,
) -> Vec<u32> {
    let before = session_counts(admins).await;
    for _ in 0..sessions {
        let session = initialize(http, edge).await;
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes.add","arguments":{"a":1,"b":2}}});
        let (_, body) = post(http, edge, Some(&session), call).await;
        assert!(body.contains('3'), "{body}");
    }
    let after = session_counts(admins).await;
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

async fn session_counts(admins: &Admins) -> Vec<u32> {
    let caller = ramen_access::Caller::acting_as(ramen_proto::metadata::ACTOR_REBALANCER);
    let mut counts = Vec::new();
    for address in &admins.addresses {
        let node = NodeTarget { group: "team", zone: "local-a", address };
        counts.push(admins.nodes.status(&caller, node).await.unwrap().sessions);
    }
    counts
}

/// Keeps `calls` slow tool calls in flight on the worker at `address` until `stop`.
fn keep_busy(address: &str, calls: usize, stop: Arc<AtomicBool>) {
    let url = format!("http://{address}/mcp");
    for _ in 0..calls {
        let (url, stop) = (url.clone(), stop.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder().no_proxy().build().unwrap();
            let session = initialize(&http, &url).await;
            while !stop.load(Ordering::Relaxed) {
                let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"weather.survey","arguments":{"city":"Paris","steps":40}}});
                post(&http, &url, Some(&session), call).await;
            }
        });
    }
}

#[tokio::test]
async fn rebalance_on_the_local_edge_shifts_traffic_between_workers() {
    let h = Harness::with_zone_manager(|_, _| {}).await;
    let workers = h.deploy("team", "local-a", 2).await;
    let admins = Admins {
        nodes: GrpcNode::new(h.platform.tickets.clone()),
        addresses: workers.iter().map(|w| w.admin_address.clone()).collect(),
    };
    let edge = serve_edge(h.zones()).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    keep_busy(&workers[0].mcp_address, 48, stop.clone());
    eventually("the busy worker's load is measured", Duration::from_secs(30), || async {
        let cell = h
            .client
            .clone()
            .get_load_cell(pb::GetLoadCellRequest { group: "team".into(), zone: "local-a".into() })
            .await
            .unwrap()
            .into_inner();
        let busy = cell
            .nodes
            .iter()
            .find(|n| n.node_id == workers[0].id)
            .map(|n| n.in_flight)
            .unwrap_or_default();
        if busy >= 40 && cell.live_nodes == 2 { Ok(()) } else { Err(cell) }
    })
    .await;

    let even = route_sessions(&http, &edge, &admins, 60).await;
    let answer = h
        .client
        .clone()
        .rebalance(pb::RebalanceRequest { group: "team".into(), zone: "local-a".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(answer.applied, "{answer:?}");
    let weight = |id: &str| answer.weights.iter().find(|w| w.target == id).unwrap().weight_permille;
    assert!(weight(&workers[0].id) <= 400 && weight(&workers[0].id) >= 100, "{answer:?}");
    assert_eq!(weight(&workers[1].id), 1000);
    let shifted = route_sessions(&http, &edge, &admins, 100).await;
    stop.store(true, Ordering::Relaxed);

    let share = |counts: &[u32]| f64::from(counts[1]) / f64::from(counts[0] + counts[1]);
    assert_eq!(even.iter().sum::<u32>(), 60, "{even:?}");
    assert!(share(&even) < 0.72, "equal weights split about evenly: {even:?}");
    assert!(
        share(&shifted) > 0.65,
        "after the rebalance most new sessions go to the idle worker: {shifted:?}"
    );
    assert!(share(&shifted) > share(&even), "{even:?} → {shifted:?}");
}
