//! Server kinds other than SDK 2.x `MCPServer`, served by a real node from the pinned
//! compatibility virtualenvs (`scripts/install-compat-servers`) and driven by the official
//! Python client over HTTP in both eras: a standalone fastmcp 4.x package (session state
//! keyed on the session id the node passes, component versions picked by `_meta`) and the
//! reference stdio program `mcp-server-time` (reported as kind `stdio` with its command
//! line, restarted after a crash and re-listed).

use std::time::Duration;

use serde_json::{Value, json};

use crate::modern::Modern;
use crate::{pyclient, support};

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_fastmcp_4_package_in_both_eras() {
    let repo = "services/runner/runtime/tests/fixtures/fastmcp4-repo";
    let node = support::start_on(repo, "fastmcp", |_| {}).await;
    let report = node.node().catalog().report.clone();
    let fm = &report.packages[0];
    assert_eq!(
        (fm.kind.as_deref(), fm.server.as_deref()),
        (Some("fastmcp"), Some("fm:mcp")),
        "{fm:?}"
    );

    let out = pyclient::run("fastmcp", &node.url).await;
    let (legacy, modern) = (&out["legacy"], &out["2026-07-28"]);
    assert_eq!(legacy["protocol_version"], "2025-11-25");
    assert_eq!(modern["protocol_version"], "2026-07-28");

    // fastmcp keys its session state on the session id the node hands the runtime.
    let session = legacy["session_ids"][0].as_str().unwrap();
    assert_eq!(
        text(&legacy["remember"]).len(),
        32,
        "the node's session id: {}",
        legacy["remember"]
    );
    assert!(!session.is_empty());
    assert_eq!(text(&legacy["recall"]), "kept in legacy", "{legacy}");
    assert_eq!(text(&legacy["other_client_recall"]), "None", "another session sees none of it");
    // A stateless request belongs to no session: each call starts fresh, as the spec says.
    assert_eq!(modern["session_ids"], json!([]));
    assert_eq!(text(&modern["recall"]), "None", "{modern}");

    for out in [legacy, modern] {
        assert_eq!(text(&out["versioned"]), "v2", "the highest version by default");
        assert_eq!(
            text(&out["versioned_v1"]),
            "v1",
            "_meta.fastmcp.version reaches fastmcp: {out}"
        );
        assert_eq!(out["point"]["structuredContent"], json!({"x": 3, "y": 4}));
        assert_eq!(text(&out["work"]), "did 3");
        assert_eq!(out["progress"], json!([1.0, 2.0, 3.0]), "{out}");
        assert_eq!(out["refuse"]["isError"], true);
        assert_eq!(text(&out["refuse"]), "refused: no");
        assert_eq!(out["info"]["contents"][0]["text"], "fm info");
        assert_eq!(out["greet"]["messages"][0]["content"]["text"], "Hello Ada");
    }
    node.stop().await;
}

/// Processes whose command line runs `mcp_server_time` under the node's directory.
fn time_servers(node: &support::TestNode) -> Vec<u32> {
    ramen_testkit::workers::pids_under(node.dir.path())
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("mcp_server_time"))
        })
        .collect()
}

#[tokio::test]
async fn a_stdio_program_as_a_package_in_both_eras() {
    let node = support::start_on("services/runner/tests/fixtures/time-repo", "stdio", |_| {}).await;
    let report = node.node().catalog().report.clone();
    let time = &report.packages[0];
    assert_eq!(time.kind.as_deref(), Some("stdio"));
    assert_eq!(time.server.as_deref(), Some("python -m mcp_server_time --local-timezone UTC"));

    let out = pyclient::run("time", &node.url).await;
    for mode in ["legacy", "2026-07-28"] {
        let out = &out[mode];
        let tools = out["tools"].as_object().unwrap();
        let mut names: Vec<&String> = tools.keys().collect();
        names.sort();
        assert_eq!(names, ["time.convert_time", "time.get_current_time"], "{mode}");
        let now = &out["now"]["structuredContent"];
        assert_eq!(now["timezone"], "UTC", "{mode}: {out}");
        assert!(now["datetime"].as_str().is_some_and(|d| d.contains('T')), "{now}");
        let converted = &out["converted"]["structuredContent"];
        assert_eq!(converted["target"]["timezone"], "Asia/Tokyo", "{converted}");
        assert_eq!(out["bad_zone"]["isError"], true, "the program's own error result: {out}");
    }

    // Kill the program: the runtime restarts it and hints the node, which re-lists.
    let before = node.metric("ramen_runtime_relists_total").await.unwrap_or(0.0);
    let pids = time_servers(&node);
    assert_eq!(pids.len(), 1, "{pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let client = Modern::new(&node.url);
    ramen_testkit::eventually("the restarted program answers", Duration::from_secs(30), || {
        let client = &client;
        async move {
            let answer = client
                .call(
                    "tools/call",
                    json!({"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}),
                )
                .await;
            match answer.body["result"]["structuredContent"]["timezone"].as_str() {
                Some("UTC") => Ok(()),
                _ => Err(answer.body),
            }
        }
    })
    .await;
    ramen_testkit::eventually(
        "the node re-listed after the restart",
        Duration::from_secs(30),
        || async {
            let now = node.metric("ramen_runtime_relists_total").await.unwrap_or(0.0);
            if now > before { Ok(()) } else { Err(now) }
        },
    )
    .await;
    let new_pids = time_servers(&node);
    assert!(new_pids.len() == 1 && new_pids[0] != pids[0], "{new_pids:?} replaced {pids:?}");
    let tools = client.call("tools/list", json!({})).await;
    assert_eq!(
        tools.body["result"]["tools"].as_array().unwrap().len(),
        2,
        "still listed: {}",
        tools.body
    );
    node.stop().await;
}
