//! The node's group code is confined: a package doing what a hostile dependency would
//! (`tests/fixtures/hostile-repo`, package `probe`) reads nothing outside its snapshot,
//! environment and scratch directory, writes only its scratch directory, connects only to its
//! group's ports, cannot read the node's memory or environment nor signal it, and sees none of
//! the node's own environment. Each reach is first shown to work with the sandbox off.

use std::net::TcpListener;
use std::path::Path;

use serde_json::{Value, json};

use crate::modern::Modern;
use crate::support::{self, TestNode};

const REPO: &str = "services/runner/tests/fixtures/hostile-repo";

/// What `probe.<tool>` answered (its return value).
async fn probe(node: &TestNode, tool: &str, arguments: Value) -> Value {
    let answer = Modern::new(&node.url)
        .call("tools/call", json!({"name": format!("probe.{tool}"), "arguments": arguments}))
        .await;
    let result = &answer.body["result"];
    assert_eq!(result["isError"], json!(false), "probe.{tool}: {}", answer.body);
    let structured = &result["structuredContent"];
    structured.get("result").unwrap_or(structured).clone()
}

/// The name of the node's abstract socket, as the probe takes it (no `@`).
fn local_socket(node: &TestNode) -> String {
    let local = node.worker().mcp_local.clone().expect("the node serves a local socket");
    local.strip_prefix('@').expect("an abstract name").to_owned()
}

fn refused(answer: &Value) -> bool {
    answer.as_str().is_some_and(|a| a.starts_with("refused: ") && a.contains("errno 13)"))
        || answer.as_str().is_some_and(|a| a.contains("Operation not permitted"))
}

/// A file of the control plane's next to the node's working directory, as `<data_dir>/keys`
/// sits above every local worker's.
fn plant_secret(dir: &Path) -> String {
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    std::fs::write(keys.join("jwt.key"), "the control plane's signing key").unwrap();
    keys.join("jwt.key").display().to_string()
}

#[tokio::test]
async fn unconfined_group_code_reaches_the_keys_the_bus_and_the_node() {
    let bus = TcpListener::bind("127.0.0.1:0").unwrap();
    let node = support::start(REPO, |c| {
        c.sandbox.enabled = false;
        c.listen_local = true;
    })
    .await;
    let secret = plant_secret(node.dir.path());
    assert_eq!(probe(&node, "read", json!({"path": secret})).await, json!("read 31 bytes"));
    let found = probe(&node, "walk_up", json!({"names": ["keys/jwt.key"]})).await;
    assert_eq!(found, json!([secret]), "walking up from its working directory finds the keys");
    let port = bus.local_addr().unwrap().port();
    let connected = probe(&node, "connect", json!({"host": "127.0.0.1", "port": port})).await;
    assert_eq!(connected, json!("connected"));
    // The node's own abstract socket, where it trusts its peer as a proxy of this host.
    let local = local_socket(&node);
    let reached = probe(&node, "connect_abstract", json!({"name": local})).await;
    assert_eq!(reached, json!("connected"));
    node.stop().await;
}

#[tokio::test]
async fn confined_group_code_reaches_only_its_own() {
    let bus = TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed_port = allowed.local_addr().unwrap().port();
    let node = support::start(REPO, |c| {
        c.sandbox.connect_ports = vec![allowed_port];
        c.listen_local = true;
    })
    .await;
    let dir = node.dir.path().to_path_buf();
    let secret = plant_secret(&dir);

    // Files: nothing of the data directory, the node's memory or environment.
    assert!(refused(&probe(&node, "read", json!({"path": secret})).await));
    let found =
        probe(&node, "walk_up", json!({"names": ["keys/jwt.key", "keys/secrets.key"]})).await;
    assert_eq!(found, json!([]), "nothing readable walking up");
    assert!(refused(&probe(&node, "listdir", json!({"path": dir.display().to_string()})).await));
    let pid = std::process::id();
    for file in ["environ", "mem", "maps", "cmdline"] {
        let path = format!("/proc/{pid}/{file}");
        assert!(refused(&probe(&node, "read", json!({"path": path})).await), "{file}");
    }
    // Its own snapshot and the system's libraries stay readable.
    let snapshot = node.worker().config.workdir.join("snapshots");
    let own = std::fs::read_dir(&snapshot).unwrap().next().unwrap().unwrap().path();
    let own = own.join("probe/__init__.py").display().to_string();
    assert!(
        probe(&node, "read", json!({"path": own})).await.as_str().unwrap().starts_with("read ")
    );
    let ssl = probe(&node, "read", json!({"path": "/etc/hosts"})).await;
    assert!(ssl.as_str().unwrap().starts_with("read "), "{ssl}");

    // Writes: only beneath its scratch directory, which is its HOME and TMPDIR.
    let planted = dir.join("planted").display().to_string();
    assert!(refused(&probe(&node, "write", json!({"path": planted})).await));
    assert!(!dir.join("planted").exists());
    let seen = probe(&node, "environment", json!({})).await;
    let home = seen["home"].as_str().unwrap();
    assert_eq!(Path::new(home), node.worker().config.workdir.join("scratch"));
    assert_eq!(seen["tmpdir"], seen["home"]);
    let scratch_file = format!("{home}/notes.txt");
    assert_eq!(probe(&node, "write", json!({"path": scratch_file})).await, json!("written"));

    // The network: the group's ports only.
    let port = bus.local_addr().unwrap().port();
    assert!(refused(&probe(&node, "connect", json!({"host": "127.0.0.1", "port": port})).await));
    let reached = probe(&node, "connect", json!({"host": "127.0.0.1", "port": allowed_port})).await;
    assert_eq!(reached, json!("connected"));
    let published = probe(
        &node,
        "publish",
        json!({"host": "127.0.0.1", "port": port, "subject": "ramen.events.v1.zone.deleted", "payload": "{}"}),
    )
    .await;
    assert!(refused(&published[0]), "{published}");
    // Nor the node's abstract socket: Landlock scopes abstract sockets to the domain.
    let local = local_socket(&node);
    assert!(refused(&probe(&node, "connect_abstract", json!({"name": local})).await));

    // Processes: no signal to the node.
    assert!(refused(&probe(&node, "signal", json!({"pid": pid})).await));

    // The node's environment (here the test harness's: cargo's and nextest's variables) stays
    // the node's.
    let names = seen["names"].as_str().unwrap();
    assert!(
        !names.split(',').any(|n| n.starts_with("CARGO") || n.starts_with("NEXTEST")),
        "{names}"
    );
    node.stop().await;
}
