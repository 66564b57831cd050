//! Authentication and least privilege on the bus: NATS operator mode ("decentralized auth"),
//! where the server trusts JWTs signed by an operator key instead of a user list, so users can
//! be minted without reconfiguring it — one per service, one per placement's nodes.
//!
//! - [`jwt`]: the claim format and nkey signatures (checked against nats-server in
//!   `tests/auth.rs`).
//! - [`AuthKeys`]: the operator, system account, ramen account and node signing key; the
//!   server configuration and service credentials derived from them.
//! - [`Role`]: one user per service, with exactly the subjects its code uses.
//! - [`NodeMinter`]: a node's user, which may publish its own load and call-record subjects,
//!   read its own inbox, and nothing else.
//! - [`Credentials`]: a user's `.creds` (JWT + seed), what [`crate::Bus::connect_as`] takes.

mod creds;
pub mod jwt;
mod keys;
mod node;
mod roles;

use std::path::Path;

pub use creds::Credentials;
pub use keys::{ACCOUNT_NAME, AuthKeys, MAX_CONTROL_LINE, NODE_SIGNING_FILE, SERVER_CONFIG_FILE};
pub use node::{
    CALLS_DLQ, CALLS_STREAM, NODE_CALLS_FILTER, NODE_CALLS_PREFIX, NODE_LOAD_FILTER,
    NODE_LOAD_PREFIX, NODE_MAX_PAYLOAD, NODE_ROLE, NodeMinter, node_calls_subject,
    node_load_subject, node_user_name, parse_node_calls_subject, parse_node_load_subject,
};
pub use roles::{
    BusNames, CALLS_DURABLE, REBALANCER_LEASE_BUCKET, REBALANCER_STATE_BUCKET, Role, inbox_prefix,
};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("NATS credentials: {0}")]
    Invalid(&'static str),
    #[error("NATS key: {0}")]
    Key(String),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error(
        "cannot mint node credentials: the {what} {value:?} is not a subject token (lowercase letters, digits, `-`)"
    )]
    Placement { what: &'static str, value: String },
    #[error("encoding claims: {0}")]
    Json(#[from] serde_json::Error),
}

impl AuthError {
    fn key(err: impl std::fmt::Display) -> AuthError {
        AuthError::Key(err.to_string())
    }

    fn base64(_: base64::DecodeError) -> AuthError {
        AuthError::Invalid("a JWT part is not base64url")
    }
}

/// What `ramen nats-auth init --out DIR` writes, and `ramen up` into `<data_dir>/keys/nats`:
/// the key set (kept when present), the server's operator configuration, and one `.creds`
/// file per service role (`<role>.creds`, 0600). Returns the key set.
pub fn write_bundle(dir: &Path, names: &BusNames) -> Result<AuthKeys, AuthError> {
    let keys = AuthKeys::load_or_generate(dir)?;
    let config = dir.join(SERVER_CONFIG_FILE);
    std::fs::write(&config, keys.server_config()?)
        .map_err(|source| AuthError::Io { path: config.display().to_string(), source })?;
    for role in Role::ALL {
        let path = dir.join(format!("{}.creds", role.name()));
        keys::write_secret(&path, &keys.credentials(role, names)?.to_text())?;
    }
    Ok(keys)
}
