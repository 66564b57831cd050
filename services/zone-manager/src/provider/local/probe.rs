//! Readiness of a worker, read from its admin port like a kubelet would.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

pub(crate) enum Probe {
    Ready,
    /// Answering, not ready: the `/readyz` body says why (no snapshot yet, runtime failed,
    /// draining...).
    NotReady(String),
    /// Not answering yet (still starting, or gone).
    Down(String),
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .no_proxy()
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

pub(crate) async fn readiness(admin: SocketAddr) -> Probe {
    let response = match client().get(format!("http://{admin}/readyz")).send().await {
        Ok(response) => response,
        Err(err) if err.is_connect() => return Probe::Down("admin port not answering yet".into()),
        Err(err) => return Probe::Down(format!("readiness probe failed: {err}")),
    };
    if response.status().is_success() {
        return Probe::Ready;
    }
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let body: String = body.trim().chars().take(400).collect();
    Probe::NotReady(format!("readiness {}: {body}", status.as_u16()))
}

/// The commit the node has loaded (`/status`, which takes only the control plane's `ticket`
/// for the node's placement).
pub(crate) async fn loaded_commit(admin: SocketAddr, ticket: &str) -> Option<String> {
    let request =
        client().get(format!("http://{admin}/status")).header(ramen_access::TICKET_HEADER, ticket);
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        tracing::warn!(%admin, %status, %body, "the worker refused its status");
        return None;
    }
    let status: serde_json::Value = response.json().await.ok()?;
    status.get("loaded_commit").and_then(|c| c.as_str()).map(str::to_owned)
}
