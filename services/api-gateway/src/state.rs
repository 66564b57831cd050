//! The gateway's shared state (axum `State`): settings, token keys, gRPC clients, the rate
//! limiter and the generated OpenAPI document.

use std::sync::{Arc, OnceLock};

use ramen_crypto::token::TokenKeys;
use ramen_state::SharedState;

use crate::clients::Clients;
use crate::rate_limit::RateLimiter;
use crate::settings::Settings;

#[derive(Clone)]
pub struct Gateway(Arc<Inner>);

struct Inner {
    settings: Settings,
    tokens: TokenKeys,
    clients: Clients,
    limiter: RateLimiter,
    openapi: OnceLock<Arc<serde_json::Value>>,
}

impl Gateway {
    pub fn new(
        settings: Settings,
        auth: &ramen_config::AuthConfig,
        state: Arc<dyn SharedState>,
        tickets: Arc<ramen_access::TicketKeys>,
    ) -> Result<Self, String> {
        let clients = Clients::connect_lazy(&settings, tickets)?;
        let limiter = RateLimiter::new(state, settings.limits, settings.limit_timeout);
        let tokens = TokenKeys::from_config(auth);
        Ok(Self(Arc::new(Inner { settings, tokens, clients, limiter, openapi: OnceLock::new() })))
    }

    pub fn settings(&self) -> &Settings {
        &self.0.settings
    }

    /// Verifies access tokens locally (same keys and code as auth; no call per request).
    pub fn tokens(&self) -> &TokenKeys {
        &self.0.tokens
    }

    pub fn clients(&self) -> &Clients {
        &self.0.clients
    }

    pub fn limiter(&self) -> &RateLimiter {
        &self.0.limiter
    }

    pub(crate) fn set_openapi(&self, document: serde_json::Value) {
        let _ = self.0.openapi.set(Arc::new(document));
    }

    pub fn openapi(&self) -> Arc<serde_json::Value> {
        self.0.openapi.get().cloned().unwrap_or_default()
    }
}
