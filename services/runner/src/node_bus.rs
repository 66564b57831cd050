//! The node's connection to the bus, as its placement's NATS user: one connection shared by
//! what it publishes there (load reports, call records), so a fleet of nodes costs NATS one
//! client each.

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::Bus;
use ramen_bus::auth::Credentials;
use tokio_util::sync::CancellationToken;

/// The node's one NATS connection, made by the first task that asks for it; the others wait
/// for that connection instead of opening their own. Cheap to clone.
#[derive(Clone, Debug)]
pub struct NodeBus(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    url: String,
    name: String,
    credentials: String,
    bus: tokio::sync::OnceCell<Bus>,
}

impl NodeBus {
    /// A connection to `url` as client `name` with the node config's `.creds` text (empty:
    /// without credentials), not made yet.
    pub fn new(url: String, name: String, credentials: String) -> Self {
        Self(Arc::new(Shared { url, name, credentials, bus: tokio::sync::OnceCell::new() }))
    }

    /// The connection, retrying every `retry` until NATS answers. `None` when cancelled first,
    /// or when the credentials are unusable (logged, naming `what` would not be published); a
    /// later caller then tries again itself.
    pub async fn get(&self, what: &str, retry: Duration, token: &CancellationToken) -> Option<Bus> {
        let Shared { url, name, credentials, bus } = &*self.0;
        let made = bus.get_or_try_init(|| async {
            connect(url, name, credentials, what, retry, token).await.ok_or(())
        });
        made.await.ok().cloned()
    }
}

/// Connects as `name` with the node config's `.creds` text (empty: without credentials),
/// retrying every `retry` until NATS answers. `None` when cancelled first, or when the
/// credentials are unusable (logged once, naming `what` would not be published).
async fn connect(
    url: &str,
    name: &str,
    credentials: &str,
    what: &str,
    retry: Duration,
    token: &CancellationToken,
) -> Option<Bus> {
    let credentials = match Some(credentials).filter(|c| !c.is_empty()).map(Credentials::parse) {
        None => None,
        Some(Ok(credentials)) => Some(credentials),
        Some(Err(err)) => {
            tracing::error!(%err, "no {what}: the node config's nats_credentials are unusable");
            return None;
        }
    };
    loop {
        match Bus::connect_as(url, name, credentials.as_ref()).await {
            Ok(bus) => return Some(bus),
            Err(err) => {
                tracing::warn!(%err, "{what}: cannot reach NATS yet");
                tokio::select! {
                    () = token.cancelled() => return None,
                    () = tokio::time::sleep(retry) => {}
                }
            }
        }
    }
}
