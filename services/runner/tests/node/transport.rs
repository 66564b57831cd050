//! Streamable HTTP rules checked with raw requests (the official client never breaks them).

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::support::{self, KEY};

pub struct Raw {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
}

impl Raw {
    pub fn new(url: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.to_owned(), session: None }
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
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
        }
        request
    }

    pub async fn initialize(&mut self) -> Value {
        let response = self
            .post(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        self.session = Some(response.headers()["mcp-session-id"].to_str().unwrap().to_owned());
        let body: Value = response.json().await.unwrap();
        let ack = self.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).send().await.unwrap();
        assert_eq!(ack.status(), 202);
        body
    }

    pub async fn call(&self, id: u64, method: &str, params: Value) -> Value {
        let response = self.post(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})).send().await.unwrap();
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
    let names: Vec<&str> = tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"notes.add"), "{names:?}");

    let sum = raw.call(2, "tools/call", json!({"name":"notes.add","arguments":{"a":2,"b":40}})).await;
    assert_eq!(sum["id"], 2);
    assert_eq!(sum["result"]["structuredContent"]["result"], 42, "{sum}");
    node.stop().await;
}
