//! A raw HTTP client for MCP 2026-07-28 (stateless) requests: the envelope in `_meta`, the
//! mirrored headers, and a reader for SSE responses (call streams, `subscriptions/listen`).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::support::KEY;

pub const VERSION: &str = "2026-07-28";

pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "ramen-test", "version": "1"},
    })
}

/// `params` with the standard envelope merged into its `_meta` (keys already there win).
pub fn with_meta(mut params: Value) -> Value {
    let mut merged = meta(json!({}));
    if let Some(own) = params.get("_meta").and_then(Value::as_object) {
        for (k, v) in own {
            merged[k] = v.clone();
        }
    }
    params["_meta"] = merged;
    params
}

pub struct Modern {
    pub http: reqwest::Client,
    pub url: String,
}

pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    /// Every JSON message of an SSE answer, in order (empty for a JSON answer).
    pub events: Vec<Value>,
}

impl Modern {
    pub fn new(url: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.to_owned() }
    }

    /// The request as a conformant client builds it (headers mirror the body).
    pub fn request(&self, id: Value, method: &str, params: &Value) -> reqwest::RequestBuilder {
        self.request_with(id, method, params, &[])
    }

    /// Like [`request`](Self::request), with some headers replaced (an empty value removes one).
    pub fn request_with(
        &self,
        id: Value,
        method: &str,
        params: &Value,
        overrides: &[(&'static str, &str)],
    ) -> reqwest::RequestBuilder {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Bearer {KEY}").parse().unwrap());
        headers.insert(ACCEPT, "application/json, text/event-stream".parse().unwrap());
        headers.insert(CONTENT_TYPE, "application/json".parse().unwrap());
        headers.insert("mcp-protocol-version", VERSION.parse().unwrap());
        headers.insert("mcp-method", method.parse().unwrap());
        let name = match method {
            "tools/call" | "prompts/get" => params.get("name"),
            "resources/read" => params.get("uri"),
            _ => None,
        };
        if let Some(name) = name.and_then(Value::as_str) {
            headers.insert("mcp-name", name.parse().unwrap());
        }
        for (header, value) in overrides {
            headers.remove(*header);
            if !value.is_empty() {
                headers.insert(*header, value.parse().unwrap());
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.http.post(&self.url).headers(headers).body(body.to_string())
    }

    /// Sends `params` with the standard `_meta` added.
    pub async fn call(&self, method: &str, params: Value) -> Answer {
        Self::read(self.request(json!(1), method, &with_meta(params))).await
    }

    pub async fn read(request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let sse = headers.get("content-type").is_some_and(|v| v == "text/event-stream");
        let text = response.text().await.unwrap();
        if !sse {
            let body = serde_json::from_str(&text).unwrap_or(Value::Null);
            return Answer { status, headers, body, events: Vec::new() };
        }
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let body =
            events.iter().rev().find(|e| e.get("id").is_some()).cloned().unwrap_or(Value::Null);
        Answer { status, headers, body, events }
    }

    /// Opens `subscriptions/listen` with `filter` and returns the stream after its
    /// acknowledgment (returned too).
    pub async fn listen(&self, id: Value, filter: Value) -> (Events, Value) {
        let params = with_meta(json!({"notifications": filter}));
        let response = self.request(id, "subscriptions/listen", &params).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut events =
            Events { stream: Box::pin(response.bytes_stream()), buffer: String::new() };
        let ack = events.next(Duration::from_secs(10)).await.expect("the acknowledgment");
        (events, ack)
    }
}

/// JSON messages of an open SSE response, one at a time.
pub struct Events {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: String,
}

impl Events {
    /// The next message within `patience`, `None` if none came (or the stream ended).
    pub async fn next(&mut self, patience: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            let chunk = tokio::time::timeout_at(deadline, self.stream.next()).await.ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    }
}
