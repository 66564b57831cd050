//! Draining: readiness fails at once and no new sessions start; `complete` lets running calls
//! finish (up to the drain timeout), `interrupt` cancels them at once. Then the node lingers
//! until its clients closed their connections.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ramen_config::DrainMode;
use ramen_testkit::eventually;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::pyclient::{Driver, error_code};
use crate::support::{self, TestNode};
use crate::transport::Raw;

const SLOW_REPO: &str = "services/runner/tests/fixtures/slow-repo";

/// A slow-repo node whose `slow.sleep` writes what it observed to a file (which outlives the
/// runtime, stopped with the node); returns the node and that file.
async fn start(mode: DrainMode, timeout: Duration) -> (TestNode, PathBuf) {
    let node = support::start(SLOW_REPO, move |config| {
        config.drain_mode = mode;
        config.drain_timeout = timeout;
        // These time the drain itself: the official client keeps its connections open after
        // it, which the linger would wait out (its own test is below).
        config.drain_linger = Duration::ZERO;
        // In the scratch directory: the one place the tool may write.
        let events = config.workdir.join("scratch/slow-events");
        config.env.insert("SLOW_EVENTS".into(), events.display().to_string());
    })
    .await;
    let events = node.worker().config.workdir.join("scratch/slow-events");
    (node, events)
}

fn events(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// Starts `slow.sleep` through the official client and waits until the tool runs.
async fn sleeping(node: &TestNode, events_file: &Path, seconds: f64) -> Driver {
    let (mut client, _) = Driver::connect(&node.url).await;
    // Listed first, as clients do: otherwise the SDK lists tools after the result arrives
    // (to validate it against the output schema), and during a drain that finds no session.
    client.list().await;
    client.start("sleep", "slow.sleep", json!({"seconds": seconds})).await;
    eventually("the sleep is running", Duration::from_secs(10), || async {
        if events(events_file) == ["started"] { Ok(()) } else { Err(events(events_file)) }
    })
    .await;
    assert_eq!(node.node().in_flight(), 1);
    client
}

/// Begins the drain in the background; returns once readiness already fails.
async fn begin_drain(node: &mut TestNode) -> tokio::task::JoinHandle<Duration> {
    let worker = node.worker.take().unwrap();
    let admin = format!("http://{}/readyz", worker.admin_addr);
    // The MCP port's own `/readyz` (what a cloud load balancer health-checks): the status
    // alone, no JSON naming dependencies.
    let public = format!("http://{}/readyz", worker.mcp_addr);
    let ready = reqwest::get(&public).await.unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    assert_eq!(ready.text().await.unwrap(), "ready");
    let drain = tokio::spawn(async move {
        let started = Instant::now();
        worker.shutdown().await;
        started.elapsed()
    });
    eventually("readiness fails", Duration::from_secs(2), || async {
        let status = reqwest::get(&admin).await.map(|r| r.status().as_u16());
        if status.as_ref().is_ok_and(|s| *s == 503) { Ok(()) } else { Err(status) }
    })
    .await;
    // A load balancer takes a draining node out: 503, or (an `interrupt` drain may have
    // stopped the listener already) no answer at all.
    if let Ok(draining) = reqwest::get(&public).await {
        assert_eq!(draining.status().as_u16(), 503, "draining is not ready");
        assert_eq!(draining.text().await.unwrap(), "not ready");
    }
    drain
}

/// Status and `Retry-After` of an initialize; asserts that a draining node asks the client to
/// close the connection (so no request is sent on a keep-alive connection the node is about
/// to close).
async fn initialize_status(url: &str) -> (u16, Option<String>) {
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    let response = Raw::new(url).post(&body).send().await.unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    let connection = response.headers().get("connection").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(connection.as_deref(), Some("close"), "a draining node closes every connection");
    (response.status().as_u16(), retry_after)
}

#[tokio::test]
async fn complete_drain_lets_the_running_call_finish() {
    let (mut node, events_file) = start(DrainMode::Complete, Duration::from_secs(30)).await;
    let mut client = sleeping(&node, &events_file, 2.0).await;
    let url = node.url.clone();
    let inner = node.worker().node.clone();

    let drain = begin_drain(&mut node).await;
    assert_eq!(inner.in_flight(), 1, "readiness failed while the call still runs");
    let (status, retry_after) = initialize_status(&url).await;
    assert_eq!(status, 503, "no new sessions while draining");
    assert!(retry_after.is_some());

    let outcome = client.join("sleep").await;
    assert_eq!(outcome["result"]["structuredContent"]["result"], "slept 2.0", "{outcome}");
    let took = drain.await.unwrap();
    assert!(took < Duration::from_secs(6), "the drain ends when the call does: {took:?}");
    assert_eq!(events(&events_file), ["started", "finished"]);
    drop(client);
}

#[tokio::test]
async fn complete_drain_cancels_what_outlives_the_timeout() {
    let (mut node, events_file) = start(DrainMode::Complete, Duration::from_secs(1)).await;
    let mut client = sleeping(&node, &events_file, 60.0).await;
    let drain = begin_drain(&mut node).await;
    let outcome = client.join("sleep").await;
    assert!(error_code(&outcome).is_some(), "the client gets an error, not a hang: {outcome}");
    let took = drain.await.unwrap();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(6), "{took:?}");
    assert_eq!(
        events(&events_file),
        ["started", "cancelled"],
        "the tool was cancelled at the timeout"
    );
    drop(client);
}

#[tokio::test]
async fn interrupt_drain_cancels_the_running_call_at_once() {
    let (mut node, events_file) = start(DrainMode::Interrupt, Duration::from_secs(30)).await;
    let mut client = sleeping(&node, &events_file, 60.0).await;
    let drain = begin_drain(&mut node).await;
    let outcome: Value = client.join("sleep").await;
    assert_eq!(error_code(&outcome), Some(-32800), "cancelled by the runtime: {outcome}");
    let took = drain.await.unwrap();
    assert!(took < Duration::from_secs(3), "interrupt does not wait for the call: {took:?}");
    assert_eq!(
        events(&events_file),
        ["started", "cancelled"],
        "the tool observed the cancellation"
    );
    drop(client);
}

/// A drained node does not close a connection its client keeps idle for reuse (the edge's
/// pool): had it closed it just as the client sent a request on it, that request would be lost
/// with no way to tell whether it ran. It answers what comes on it meanwhile, closing the
/// connection with the answer, and stops as soon as no connection is open.
#[tokio::test]
async fn a_drained_node_stays_until_its_clients_close_their_connections() {
    let mut node = support::start(SLOW_REPO, |config| {
        config.drain_linger = Duration::from_secs(60);
    })
    .await;
    let addr = node.worker().mcp_addr;
    let mut held = TcpStream::connect(addr).await.unwrap();
    let (status, head) = exchange(&mut held, addr, &initialize_body()).await;
    assert_eq!(status, 200, "{head}");
    assert!(!head.contains("connection: close"), "kept alive for the next request: {head}");

    let worker = node.worker.take().unwrap();
    let drain = tokio::spawn(async move {
        let started = Instant::now();
        worker.shutdown().await;
        started.elapsed()
    });
    // Nothing runs, so the drain itself is over at once; the node must still hold the
    // connection open for its client.
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(1), held.read(&mut byte)).await;
    assert!(read.is_err(), "the drained node closed a connection its client holds: {read:?}");

    let (status, head) = exchange(&mut held, addr, &initialize_body()).await;
    assert_eq!(status, 503, "a request sent on it is answered: no new session here: {head}");
    assert!(head.contains("connection: close"), "and the answer closes it: {head}");
    let read = tokio::time::timeout(Duration::from_secs(5), held.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0))), "the node closed the connection after the answer: {read:?}");
    let took = tokio::time::timeout(Duration::from_secs(30), drain)
        .await
        .expect("the node stops once no connection is open, not after its 60 s linger")
        .unwrap();
    assert!(took < Duration::from_secs(30), "{took:?}");
}

fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}})
}

/// One POST to the MCP path on `stream`, written as HTTP/1.1 by hand (so the test holds the one
/// connection), and its status and head (lowercased); the body is read by its length.
async fn exchange(stream: &mut TcpStream, addr: SocketAddr, body: &Value) -> (u16, String) {
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {key}\r\n\
         accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n\
         content-length: {len}\r\n\r\n{body}",
        key = support::KEY,
        len = body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    let end = loop {
        if let Some(at) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before an answer");
        read.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&read[..end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while read.len() < end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed mid-answer");
        read.extend_from_slice(&chunk[..n]);
    }
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head)
}
