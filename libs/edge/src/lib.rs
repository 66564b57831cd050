//! The MCP edge: clients reach every environment of every group through one hostname at
//! `/mcp/{group}/{environment}`. The edge picks a zone (the `ramen-zone` header, or a
//! healthy zone by weight), applies the zone's IP rules, proxies to a worker node, and fails
//! over to another zone when one is down and the client did not pin a zone.
//!
//! MCP sessions (2025-11-25) stick to the node that created them without any shared store:
//! the session id the client sees is the node's id sealed (AES-256-GCM) together with the
//! node's address, so a client can neither read nor forge where it goes. When that node is
//! gone the client gets 404 and initializes again, as the MCP specification prescribes.
//!
//! Stateless requests (2026-07-28, `MCP-Protocol-Version` of that revision, no session) need
//! no affinity: each goes to a worker drawn by weight and moves on to the next worker or
//! zone when one cannot be reached or answers 503 (draining, at its cap: not processed). A
//! `tools/call` or `prompts/get` whose `Mcp-Name` is blocked on the environment is refused
//! (-32601) here, before any node sees it; the node checks the header against the body.
//!
//! With a [`KeyBook`], MCP keys are checked here too (each hash with its expiry, from auth):
//! a request without a live key of the environment gets 401 before any node is chosen.

mod access;
mod directory;
mod keys;
mod proxy;
mod select;
mod session;
mod stateless;
mod upstream;

pub use access::{EdgeAuth, EdgeCaller};
pub use directory::{
    Blocked, Directory, DirectoryError, Environment, GrpcDirectory, Route, StaticDirectory,
    WorkerRoute, ZoneRoute, zone_routes,
};
pub use keys::{FRESH_FOR, KeyBook, KeyVerdict, REFETCH_AFTER};
pub use proxy::{Edge, EdgeRoute, EdgeSettings, router};
pub use session::{OpenedSession, SessionSealer};

/// Header a client sets to pin a zone.
pub const ZONE_HEADER: &str = "ramen-zone";
