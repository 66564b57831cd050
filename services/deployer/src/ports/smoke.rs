//! The smoke test of step 4: the worker's whole surface (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`, every page) over MCP streamable HTTP, read as an
//! ordinary caller with a per-job key, from a canary and (for the surface review) from a
//! stable worker. The key is derived from the secrets key and the job id (HMAC), so a deployer
//! that resumes the job computes the same one without it being stored. Behind [`Smoke`] so the
//! pipeline's own tests run it against a fake.

use std::time::Duration;

use ramen_surface::Surface;

/// Reads what a worker offers an ordinary MCP caller.
#[async_trait::async_trait]
pub trait Smoke: Send + Sync + 'static {
    /// What the worker at `address` (`host:port`) lists to a caller holding `key`.
    async fn surface(&self, address: &str, key: &str, timeout: Duration)
    -> Result<Surface, String>;
}

/// The real one: MCP streamable HTTP, revision 2025-11-25, as any client would.
pub struct HttpSmoke;

#[async_trait::async_trait]
impl Smoke for HttpSmoke {
    async fn surface(
        &self,
        address: &str,
        key: &str,
        timeout: Duration,
    ) -> Result<Surface, String> {
        surface(address, key, timeout).await
    }
}

use hmac::{Hmac, Mac};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};
use sha2::Sha256;

/// The smoke key of `job_id`.
pub fn smoke_key(secret: &[u8], job_id: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"ramen/deploy-smoke-key/");
    mac.update(job_id.as_bytes());
    format!("rk_smoke_{}", &hex::encode(mac.finalize().into_bytes())[..40])
}

const PROTOCOL: &str = "2025-11-25";

/// The tool names the worker at `address` (`host:port`) lists to a caller holding `key`.
pub async fn tools_list(
    address: &str,
    key: &str,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let surface = surface(address, key, timeout).await?;
    Ok(surface.names(ramen_surface::Kind::Tool).map(str::to_owned).collect())
}

/// The lists of a surface: method, the result's field, and the capability that offers it
/// (a server without the capability answers "method not found", so it is not asked).
const LISTS: [(&str, &str, &str); 4] = [
    ("tools/list", "tools", "tools"),
    ("resources/list", "resources", "resources"),
    ("resources/templates/list", "resourceTemplates", "resources"),
    ("prompts/list", "prompts", "prompts"),
];

/// Pages past this many are refused: a server whose cursor never ends is broken.
const MAX_PAGES: usize = 100;

/// The whole surface the worker at `address` (`host:port`) lists to a caller holding `key`.
pub async fn surface(address: &str, key: &str, timeout: Duration) -> Result<Surface, String> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    let url = format!("http://{address}/mcp");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "ramen-deploy-smoke", "version": env!("CARGO_PKG_VERSION")}}});
    let (session, answer) = post(&http, &url, key, None, &init).await?;
    if answer.get("error").is_some() {
        return Err(format!("initialize answered an error: {}", answer["error"]));
    }
    let capabilities = answer["result"]["capabilities"].clone();
    let session = session.ok_or("initialize answered without an Mcp-Session-Id")?;
    post(
        &http,
        &url,
        key,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    let mut lists: [Vec<Value>; 4] = Default::default();
    let mut id = 0;
    for ((method, field, capability), items) in LISTS.iter().zip(lists.iter_mut()) {
        if capabilities.get(capability).is_none() {
            continue;
        }
        let mut cursor: Option<String> = None;
        for page in 1..=MAX_PAGES + 1 {
            if page > MAX_PAGES {
                return Err(format!("{method} still had a next page after {MAX_PAGES} pages"));
            }
            id += 1;
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let (_, answer) = post(&http, &url, key, Some(&session), &request).await?;
            let Some(result) = answer.get("result") else {
                return Err(format!("{method} answered {answer}"));
            };
            let page_items = result[field]
                .as_array()
                .ok_or_else(|| format!("{method} result has no `{field}` list"))?;
            items.extend(page_items.iter().cloned());
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
    }
    let _ = http
        .delete(&url)
        .header(AUTHORIZATION, format!("Bearer {key}"))
        .header("mcp-session-id", &session)
        .send()
        .await;
    let [tools, resources, templates, prompts] = &lists;
    Surface::from_lists(tools, resources, templates, prompts)
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    session: Option<&str>,
    body: &Value,
) -> Result<(Option<String>, Value), String> {
    let mut request = http
        .post(url)
        .header(AUTHORIZATION, format!("Bearer {key}"))
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(session) = session {
        request =
            request.header("mcp-session-id", session).header("mcp-protocol-version", PROTOCOL);
    }
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let session =
        response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = response.text().await.map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        let body: String = text.chars().take(300).collect();
        return Err(format!("HTTP {status} from {url}: {body}"));
    }
    if text.trim().is_empty() {
        return Ok((session, Value::Null));
    }
    let value =
        if sse { last_response(&text, body.get("id")) } else { serde_json::from_str(&text).ok() };
    value.map(|v| (session, v)).ok_or_else(|| {
        format!("not a JSON-RPC answer: {}", text.chars().take(300).collect::<String>())
    })
}

/// The SSE event carrying the response to the request `id`.
fn last_response(text: &str, id: Option<&Value>) -> Option<Value> {
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|v| v.get("id") == id && (v.get("result").is_some() || v.get("error").is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke_keys_are_per_job_and_stable() {
        let a = smoke_key(b"k", "job-1");
        assert_eq!(a, smoke_key(b"k", "job-1"));
        assert_ne!(a, smoke_key(b"k", "job-2"));
        assert_ne!(a, smoke_key(b"other", "job-1"));
        assert!(a.starts_with("rk_smoke_"));
    }

    #[test]
    fn finds_the_answer_in_an_event_stream() {
        let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n\n";
        let found = last_response(text, Some(&json!(3))).unwrap();
        assert!(found["result"]["tools"].is_array());
    }
}
