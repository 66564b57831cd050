//! The cryptography more than one service needs, in one place:
//! - [`seal`]: secret values sealed with AES-256-GCM under `RAMEN_SECRETS_KEY` (auth's secrets,
//!   the deployer's GitHub App key);
//! - [`token`]: the HS256 access tokens auth issues and the api-gateway verifies locally.
//!
//! (Caller tickets between services are `ramen-access`; the MCP-key hash rule is
//! `ramen-node-contract`, because the node applies it.)

pub mod seal;
pub mod token;
