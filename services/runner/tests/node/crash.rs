//! Runtime supervision: when the Python process dies, in-flight calls get a JSON-RPC error,
//! readiness goes false, the node restarts it (counted in `/metrics`) and calls work again.

use std::time::Duration;

use ramen_testkit::eventually;
use serde_json::json;

use crate::pyclient::{Driver, error_code};
use crate::support::{self, TestNode};

const SLOW_REPO: &str = "services/runner/tests/fixtures/slow-repo";
const RESTARTS: &str = "ramen_runtime_restarts_total";

async fn ready_again(node: &TestNode) {
    eventually("readiness fails", Duration::from_secs(5), || async {
        match node.readyz().await {
            503 => Ok(()),
            other => Err(other),
        }
    })
    .await;
    eventually("the runtime is back", Duration::from_secs(30), || async {
        match node.readyz().await {
            200 => Ok(()),
            other => Err(other),
        }
    })
    .await;
}

#[tokio::test]
async fn a_crashing_tool_fails_in_flight_calls_and_the_runtime_comes_back() {
    let node = support::start(SLOW_REPO, |_| {}).await;
    assert_eq!(node.metric(RESTARTS).await, Some(0.0));
    let (mut client, _) = Driver::connect(&node.url).await;
    client.start("sleep", "slow.sleep", json!({"seconds": 60})).await;
    let inner = node.node();
    eventually("the sleep is in flight", Duration::from_secs(10), || async {
        if inner.in_flight() == 1 { Ok(()) } else { Err(inner.in_flight()) }
    })
    .await;

    let crash = client.call("slow.crash", json!({})).await;
    assert_eq!(error_code(&crash), Some(-32603), "{crash}");
    let sleep = client.join("sleep").await;
    assert_eq!(error_code(&sleep), Some(-32603), "the other in-flight call fails too: {sleep}");
    assert!(sleep["error"]["message"].as_str().unwrap().contains("retry"), "{sleep}");
    ready_again(&node).await;
    assert_eq!(node.metric(RESTARTS).await, Some(1.0));

    // Same session, fresh runtime: nothing is running any more.
    let stats = client.call("slow.stats", json!({})).await;
    assert_eq!(
        stats["result"]["structuredContent"],
        json!({"running": 0, "finished": 0, "cancelled": 0}),
        "{stats}"
    );
    client.quit().await;
    node.stop().await;
}

/// The runtime process of this node (its command line names the node's temp dir).
fn runtime_pid(node: &TestNode) -> i32 {
    let dir = node.dir.path().display().to_string();
    let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        (cmdline.contains("ramen_runtime") && cmdline.contains(&dir)).then_some(pid)
    });
    found.expect("the runtime process of this node")
}

#[tokio::test]
async fn a_killed_runtime_is_restarted() {
    let node = support::start(SLOW_REPO, |_| {}).await;
    let (mut client, _) = Driver::connect(&node.url).await;
    client.start("sleep", "slow.sleep", json!({"seconds": 60})).await;
    let inner = node.node();
    eventually("the sleep is in flight", Duration::from_secs(10), || async {
        if inner.in_flight() == 1 { Ok(()) } else { Err(inner.in_flight()) }
    })
    .await;

    let pid = runtime_pid(&node);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    let sleep = client.join("sleep").await;
    assert_eq!(error_code(&sleep), Some(-32603), "{sleep}");
    ready_again(&node).await;
    assert_eq!(node.metric(RESTARTS).await, Some(1.0));
    assert_ne!(runtime_pid(&node), pid, "a new process");
    let fast = client.call("slow.fast", json!({})).await;
    assert_eq!(fast["result"]["structuredContent"]["result"], "fast", "{fast}");
    client.quit().await;
    node.stop().await;
}
