//! A minimal MCP streamable-HTTP client (plain JSON answers), as an ordinary caller of a worker.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

/// Why a call failed: the HTTP status and body, or a transport error.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub body: String,
}

pub struct Mcp {
    http: reqwest::Client,
    url: String,
    key: String,
    session: String,
}

impl Mcp {
    /// `initialize` + `notifications/initialized` against `http://<address>/mcp`.
    pub async fn connect(address: &str, key: &str) -> Result<Self, Refused> {
        let mut mcp = Self {
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            url: format!("http://{address}/mcp"),
            key: key.to_owned(),
            session: String::new(),
        };
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"zone-test","version":"0"}}});
        let response = mcp.post(&init).await?;
        mcp.session = response.0.unwrap_or_default();
        mcp.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await?;
        Ok(mcp)
    }

    async fn post(&self, body: &Value) -> Result<(Option<String>, Value), Refused> {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.key))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if !self.session.is_empty() {
            request = request
                .header("mcp-session-id", &self.session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let response =
            request.send().await.map_err(|e| Refused { status: 0, body: e.to_string() })?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            return Err(Refused { status, body: text });
        }
        Ok((session, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Refused> {
        Ok(self.post(&json!({"jsonrpc":"2.0","id":1,"method":method,"params":params})).await?.1)
    }

    pub async fn tool_names(&self) -> Result<Vec<String>, Refused> {
        let answer = self.request("tools/list", json!({})).await?;
        Ok(answer["result"]["tools"]
            .as_array()
            .map(|tools| {
                tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
            })
            .unwrap_or_default())
    }

    /// `notes.add(a, b)`: the JSON-RPC answer.
    pub async fn add(&self, a: i64, b: i64) -> Result<Value, Refused> {
        self.request("tools/call", json!({"name":"notes.add","arguments":{"a":a,"b":b}})).await
    }
}

/// One complete call on a fresh session: what a client does after its node went away.
pub async fn add_once(address: &str, key: &str, a: i64, b: i64) -> Result<i64, Refused> {
    let mcp = Mcp::connect(address, key).await?;
    let answer = mcp.add(a, b).await?;
    answer["result"]["structuredContent"]["result"]
        .as_i64()
        .ok_or(Refused { status: 200, body: answer.to_string() })
}
