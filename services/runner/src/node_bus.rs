//! The node's connection to the bus, as its placement's NATS user: shared by what it publishes
//! there (load reports, call records), each on a connection of its own.

use std::time::Duration;

use ramen_bus::Bus;
use ramen_bus::auth::Credentials;
use tokio_util::sync::CancellationToken;

/// Connects as `name` with the node config's `.creds` text (empty: without credentials),
/// retrying every `retry` until NATS answers. `None` when cancelled first, or when the
/// credentials are unusable (logged once, naming `what` would not be published).
pub async fn connect(
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
