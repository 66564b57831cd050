//! `auth`: identities, roles, sessions, MCP keys, sealed secrets, service-account rules and the
//! audit log, served as `AuthService` (gRPC) over the collections in `collections.rs`.
//!
//! - [`Auth`] is the domain: every method takes the caller ([`Caller`]) and checks its rights
//!   itself with the one rule (`ramen_access::decide`), so the rules hold whoever calls.
//! - [`token`] and [`seal`] are `ramen-crypto`'s (the api-gateway verifies tokens and the
//!   deployer seals with the same code); [`password`] hashes passwords.
//! - [`launch`] starts the service and returns the bootstrap admin's one-time password when it
//!   created one; [`start`] is the plain form `ramen serve auth` uses.

mod access;
mod audit;
mod authorize;
mod bootstrap;
pub mod calls;
mod collections;
mod conversions;
mod error;
mod events;
mod groups;
mod grpc;
mod keys;
mod members;
mod model;
mod paging;
pub mod password;
mod pending;
mod refresh;
mod secrets;
mod service_account;
mod sessions;
mod sso;
mod users;
mod validate;

use std::sync::Arc;
use std::time::Duration;

use ramen_bus::Bus;
pub use ramen_crypto::{seal, token};
use ramen_proto::auth::v1::auth_service_server::AuthServiceServer;
use ramen_service::{Platform, Running};
use ramen_store::DocumentStore;

pub use audit::AuditQuery;
pub use bootstrap::{BootstrapAdmin, LOCAL_DEFAULT_EMAIL, bootstrap_email};
pub use collections::Collections;
pub use error::AuthError;
pub use keys::{NewKey, key_hash};
pub use members::{Member, Who};
pub use model::Role;
pub use ramen_access::{Caller, Need, SERVICE_ACTORS, Standing, decide, need};
pub use secrets::{ResealReport, Resolved, Scope, reseal};
pub use sessions::Session;
pub use sso::{Callback, SignInOptions, SsoFinish, SsoStart};

use crate::events::Events;
use crate::seal::Sealer;
use crate::token::TokenKeys;

/// How often expired refresh tokens are swept.
const SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Listen(#[from] std::io::Error),
    #[error("auth collections: {0}")]
    Store(#[from] ramen_store::StoreError),
    #[error("events stream: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("{0}")]
    Config(#[from] ramen_config::ConfigError),
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] AuthError),
}

/// The auth domain over its collections, signing keys, sealing keys and the bus.
#[derive(Clone)]
pub struct Auth {
    db: Collections,
    tokens: Arc<TokenKeys>,
    sealer: Arc<Sealer>,
    events: Events,
    refresh_ttl: Duration,
    sso: Arc<sso::SsoSettings>,
}

impl Auth {
    /// Builds the domain and ensures its collections (and the events stream it publishes to).
    pub async fn open(
        store: Arc<dyn DocumentStore>,
        bus: Bus,
        config: &ramen_config::Config,
    ) -> Result<Self, StartError> {
        let auth = Self {
            db: Collections::new(store).with_calls_retention(config.calls.retention),
            tokens: Arc::new(TokenKeys::from_config(&config.auth)),
            sealer: Arc::new(Sealer::from_config(&config.auth)?),
            events: Events::new(bus),
            refresh_ttl: config.auth.refresh_ttl,
            sso: sso::SsoSettings::from_config(config),
        };
        auth.db.ensure().await?;
        auth.events.ensure_stream(&config.nats).await?;
        Ok(auth)
    }
}

/// A started auth service.
pub struct Started {
    pub running: Running,
    pub auth: Auth,
    /// Set when this start created the bootstrap admin (first boot of an empty user store).
    pub bootstrap: Option<BootstrapAdmin>,
}

/// Starts auth on `platform`: collections, bootstrap admin, gRPC server, refresh-token sweeper.
pub async fn launch(platform: Platform) -> Result<Started, StartError> {
    let config = platform.config.clone();
    let auth = Auth::open(platform.store.clone(), platform.bus.clone(), &config).await?;
    let bootstrap = auth.bootstrap(bootstrap_email(&config)).await?;
    let routes = tonic::service::Routes::new(AuthServiceServer::new(grpc::AuthGrpc(auth.clone())));
    let (addr, handle) =
        platform.serve_grpc(config.listen.auth, routes, ramen_access::audience::AUTH).await?;
    calls::ensure_stream(&platform.bus).await?;
    let (ingest, bus) = (auth.clone(), platform.bus.clone());
    platform.tasks.spawn("auth-call-records", move |stop| calls::ingest(ingest, bus, stop));
    let sweeper = auth.clone();
    platform.tasks.spawn("auth-refresh-sweeper", move |stop| async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(SWEEP_INTERVAL) => {
                    if let Err(error) = sweeper.sweep_refresh().await {
                        tracing::warn!(%error, "sweeping expired refresh tokens failed");
                    }
                }
            }
        }
    });
    Ok(Started { running: Running::new("auth", addr, handle), auth, bootstrap })
}

/// [`launch`], for `ramen serve auth`.
pub async fn start(platform: Platform) -> Result<Running, StartError> {
    Ok(launch(platform).await?.running)
}
