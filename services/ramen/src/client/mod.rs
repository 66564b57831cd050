//! The `ramen` client subcommands: they talk to the REST API (`/api/...`) with a stored
//! login, print tables for people and JSON for scripts (`--json`), and exit with codes a
//! script can branch on (see [`exit`]).

mod api;
mod calls;
mod commands;
mod credentials;
mod deploy;
mod output;
mod sso;

pub use commands::{ClientCommand, Common, run};

/// Exit codes of the client subcommands.
pub mod exit {
    /// Something went wrong that fits no other code (a bug, an unreadable answer).
    pub const FAILURE: u8 = 1;
    /// The command line or the input was invalid (also HTTP 400 / 422).
    pub const USAGE: u8 = 2;
    /// The named thing does not exist, or you may not see it (HTTP 404).
    pub const NOT_FOUND: u8 = 3;
    /// Not logged in, the login expired, or not allowed (HTTP 401 / 403).
    pub const DENIED: u8 = 4;
    /// It conflicts with what exists, or with something running (HTTP 409 / 412).
    pub const CONFLICT: u8 = 5;
    /// ramen could not be reached or failed (HTTP 429 / 5xx, connection refused).
    pub const UNAVAILABLE: u8 = 6;
    /// `deploy --wait`: the deploy ran and failed (or was cancelled).
    pub const DEPLOY_FAILED: u8 = 7;
}
