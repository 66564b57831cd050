//! ramen's configuration, layered with figment: built-in defaults < `ramen.toml` (or the file
//! named by `RAMEN_CONFIG`) < `RAMEN_*` environment variables, then validated.
//!
//! Nested keys use `__` in the environment (`RAMEN_NATS__ACK_WAIT=45s` sets `nats.ack_wait`).
//! The operator-facing names from the runbook (`RAMEN_NATS_URL`, `RAMEN_JWT_SECRET`, …) are
//! aliases listed in [`env::ALIASES`].

mod env;
mod error;
mod kubernetes;
mod model;
pub mod reference;
mod secret;
mod validate;
pub use validate::{MIN_JWT_SECRET_BYTES, Requirement, SECRETS_KEY_BYTES, decode_secrets_key};

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};

pub use env::ALIASES;
pub use error::{ConfigError, EXIT_CONFIG};
pub use kubernetes::{ClusterAccess, ClusterConfig, KubernetesConfig};
pub use model::*;
pub use secret::Secret;

impl Config {
    /// Loads defaults < `ramen.toml` < environment, and validates. Local mode also creates the
    /// data directory and its generated keys.
    pub fn load() -> Result<Self, ConfigError> {
        Self::load_for(&[])
    }

    /// Like [`load`](Self::load), for a service that also needs `needs` in cloud mode; every
    /// missing variable is named in one error.
    pub fn load_for(needs: &[Requirement]) -> Result<Self, ConfigError> {
        let file = std::env::var_os("RAMEN_CONFIG").map(PathBuf::from);
        Self::from_figment_for(
            Self::figment(file.as_deref().or(Some(Path::new("ramen.toml")))),
            needs,
        )
    }

    /// The layered sources without validation; tests add their own layers on top.
    pub fn figment(file: Option<&Path>) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            figment = figment.merge(Toml::file(file));
        }
        figment.merge(env::provider())
    }

    pub fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        Self::from_figment_for(figment, &[])
    }

    pub fn from_figment_for(figment: Figment, needs: &[Requirement]) -> Result<Self, ConfigError> {
        let mut config: Config = figment.extract().map_err(ConfigError::from_figment)?;
        config.validate(needs)?;
        if config.mode == Mode::Local {
            config.prepare_local()?;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests;
