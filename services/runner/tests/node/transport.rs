//! Streamable HTTP rules checked with raw requests (the official client never breaks them).

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::support::{self, KEY};

const SUPPORTED: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub struct Raw {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    /// The revision sent in `initialize` and, after it, in `MCP-Protocol-Version`
    /// (`None` after initialize: no header, as 2025-03-26 clients may do).
    pub version: Option<&'static str>,
}

impl Raw {
    pub fn new(url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session: None,
            version: Some("2025-11-25"),
        }
    }

    pub fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
            if let Some(version) = self.version {
                request = request.header("mcp-protocol-version", version);
            }
        }
        request
    }

    pub async fn initialize(&mut self) -> Value {
        let response = self
            .post(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":self.version.unwrap_or("2025-03-26"),"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        self.session = Some(response.headers()["mcp-session-id"].to_str().unwrap().to_owned());
        let body: Value = response.json().await.unwrap();
        if self.version.is_some() {
            // Later requests carry the negotiated revision, as a real client's do.
            self.version = body["result"]["protocolVersion"]
                .as_str()
                .and_then(|v| SUPPORTED.iter().find(|s| **s == v))
                .copied();
        }
        let ack = self
            .post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .send()
            .await
            .unwrap();
        assert_eq!(ack.status(), 202);
        body
    }

    pub async fn call(&self, id: u64, method: &str, params: Value) -> Value {
        let response = self
            .post(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{method}");
        response.json().await.unwrap()
    }
}

#[tokio::test]
async fn initialize_list_and_call() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let mut raw = Raw::new(&node.url);
    let init = raw.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);

    let tools = raw.call(1, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"notes.add"), "{names:?}");

    let sum =
        raw.call(2, "tools/call", json!({"name":"notes.add","arguments":{"a":2,"b":40}})).await;
    assert_eq!(sum["id"], 2);
    assert_eq!(sum["result"]["structuredContent"]["result"], 42, "{sum}");
    node.stop().await;
}

#[tokio::test]
async fn clients_on_older_revisions_are_accepted() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    for version in ["2025-06-18", "2025-03-26"] {
        let mut raw = Raw::new(&node.url);
        raw.version = Some(version);
        let init = raw.initialize().await;
        assert_eq!(
            init["result"]["protocolVersion"], version,
            "the node speaks the client's revision"
        );
        let sum =
            raw.call(1, "tools/call", json!({"name":"notes.add","arguments":{"a":1,"b":2}})).await;
        assert_eq!(sum["result"]["structuredContent"]["result"], 3, "{version}: {sum}");
    }
    // A 2025-03-26 client may send no MCP-Protocol-Version at all.
    let mut raw = Raw::new(&node.url);
    raw.version = None;
    raw.initialize().await;
    let tools = raw.call(1, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| t.len() == 7), "{tools}");
    // A revision the node does not know is answered with the newest it speaks.
    let mut raw = Raw::new(&node.url);
    raw.version = Some("2099-01-01");
    let init = raw.initialize().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    node.stop().await;
}

#[tokio::test]
async fn server_discover_is_answered_and_a_bare_probe_is_a_modern_error() {
    // 2026-07-28 requires server/discover: the node answers it (it used to refuse it with
    // -32601 so clients fell back to initialize). A probe without the envelope is malformed
    // for that revision: 400 with a JSON-RPC error a dual-era client recognizes.
    let node = support::start("examples/hello-repo", |_| {}).await;
    let raw = Raw::new(&node.url);
    let probe = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}});
    let response = raw.post(&probe).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["id"], 1);
    let proper = json!({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    let response = raw
        .post(&proper)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["supportedVersions"][0], "2026-07-28", "{body}");
    node.stop().await;
}

/// What the node's fast route for the MCP path declines is answered by its router, as before
/// the fast route: other methods, HEAD, and paths that only look like the endpoint.
#[tokio::test]
async fn requests_the_fast_route_declines_are_answered_by_the_router() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let url = node.url.clone();
    let http = reqwest::Client::new();
    let put = http.put(&url).header(AUTHORIZATION, format!("Bearer {KEY}")).send().await.unwrap();
    assert_eq!(put.status(), 405, "PUT on the endpoint");
    let allow = put.headers()["allow"].to_str().unwrap().to_owned();
    for method in ["GET", "HEAD", "POST", "DELETE"] {
        assert!(allow.contains(method), "Allow names {method}: {allow}");
    }
    // HEAD runs GET's handler (axum's rule): no key, so 401 with the challenge.
    let head = http.head(&url).send().await.unwrap();
    assert_eq!(head.status(), 401, "HEAD without a key");
    assert!(head.headers().contains_key("www-authenticate"));
    for near in [format!("{url}/"), format!("{url}x")] {
        let post = http
            .post(&near)
            .header(AUTHORIZATION, format!("Bearer {KEY}"))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), 404, "{near}");
    }
    // And the endpoint itself answers through the fast route.
    let mut raw = Raw::new(&url);
    raw.initialize().await;
    assert_eq!(raw.call(1, "ping", json!({})).await["result"], json!({}));
    node.stop().await;
}
