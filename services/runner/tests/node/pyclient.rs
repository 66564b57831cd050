//! Runs the official Python MCP client (`tests/clients/mcp_scenarios.py`, on the pinned `mcp`
//! SDK of the test virtualenv) against a node: whole scenarios that print one JSON answer,
//! or the interactive `drive` scenario that keeps one session open while the test changes
//! the node between steps.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::support::{self, KEY};

/// No scenario legitimately takes this long; a hang fails the test instead of stalling it.
const PATIENCE: Duration = Duration::from_secs(90);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp_scenarios.py")
}

fn command(scenario: &str, url: &str) -> Command {
    let mut command = Command::new(support::python());
    // The SDK warns that handshake-era features are deprecated in its newest revision.
    command.args(["-W", "ignore"]).arg(script()).args([scenario, url, KEY]).kill_on_drop(true);
    command
}

/// Runs a one-shot scenario and returns the JSON object it printed.
pub async fn run(scenario: &str, url: &str) -> Value {
    let output = tokio::time::timeout(PATIENCE, command(scenario, url).output())
        .await
        .unwrap_or_else(|_| panic!("scenario {scenario} did not finish within {PATIENCE:?}"))
        .expect("the test venv python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "scenario {scenario} failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!("scenario {scenario} printed no JSON ({e}):\n{stdout}\n{stderr}")
    })
}

/// The `drive` scenario: one official-client session, commanded line by line.
pub struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Driver {
    /// Connects (initialize, initialized, GET stream open) and returns the greeting.
    pub async fn connect(url: &str) -> (Self, Value) {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let mut child = command("drive", url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("the test venv python runs");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut driver = Self { child, stdin, lines, stderr, _dir: dir };
        let hello = driver.read().await;
        assert_eq!(hello["ready"], true, "{hello}");
        (driver, hello)
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line()).await;
        match line {
            Ok(Ok(Some(line))) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("driver said {line:?}: {e}"))
            }
            other => {
                let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                panic!("the driver stopped answering ({other:?}); its stderr:\n{stderr}")
            }
        }
    }

    pub async fn send(&mut self, command: Value) -> Value {
        let mut line = command.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
        self.read().await
    }

    /// Names (tools, prompts), URIs (resources) and URI templates the client can list.
    pub async fn list(&mut self) -> Listing {
        let answer = self.send(json!({"op": "list"})).await;
        let strings = |kind: &str| {
            answer[kind]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        Listing {
            tools: strings("tools"),
            resources: strings("resources"),
            templates: strings("templates"),
            prompts: strings("prompts"),
        }
    }

    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.send(json!({"op": "call", "name": name, "arguments": arguments})).await
    }

    /// Starts a call and leaves it running; [`join`](Self::join) collects its outcome.
    pub async fn start(&mut self, tag: &str, name: &str, arguments: Value) {
        let answer = self
            .send(json!({"op": "start", "tag": tag, "name": name, "arguments": arguments}))
            .await;
        assert_eq!(answer["started"], tag);
    }

    pub async fn join(&mut self, tag: &str) -> Value {
        self.send(json!({"op": "join", "tag": tag})).await
    }

    /// Waits (up to 15 s) until `count` notifications of `method` arrived in total.
    pub async fn wait(&mut self, method: &str, count: usize) -> usize {
        let answer = self.send(json!({"op": "wait", "method": method, "count": count})).await;
        answer["count"].as_u64().unwrap() as usize
    }

    /// How many notifications of `method` arrived, after letting `settle` pass so a late
    /// (unwanted) one would be counted too.
    pub async fn count_after(&mut self, method: &str, settle: Duration) -> usize {
        let command = json!({"op": "wait", "method": method, "count": usize::MAX, "timeout": settle.as_secs_f64()});
        self.send(command).await["count"].as_u64().unwrap() as usize
    }

    /// Leaves the session (the SDK sends DELETE) and waits for the client to exit.
    pub async fn quit(mut self) {
        let bye = self.send(json!({"op": "quit"})).await;
        assert_eq!(bye["bye"], true);
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "driver exited with {status}");
    }
}

#[derive(Debug)]
pub struct Listing {
    pub tools: Vec<String>,
    pub resources: Vec<String>,
    pub templates: Vec<String>,
    pub prompts: Vec<String>,
}

/// The JSON-RPC error code of a driver answer, if it is an error.
pub fn error_code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}
