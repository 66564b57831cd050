//! The MCP edge: clients reach every environment of every group through one hostname at
//! `/mcp/{group}/{environment}`. The edge picks a zone (the `ramen-zone` header, or a
//! healthy zone by weight), applies the zone's IP rules, proxies to a worker node, and fails
//! over to another zone when one is down and the client did not pin a zone.
//!
//! MCP sessions stick to the node that created them without any shared store: the session
//! id the client sees is the node's id sealed (AES-256-GCM) together with the node's
//! address, so a client can neither read nor forge where it goes. When that node is gone
//! the client gets 404 and initializes again, as the MCP specification prescribes.

mod directory;
mod proxy;
mod select;
mod session;

pub use directory::{
    Directory, DirectoryError, GrpcDirectory, Route, StaticDirectory, WorkerRoute, ZoneRoute,
};
pub use proxy::{Edge, EdgeSettings, router};
pub use session::SessionSealer;

/// Header a client sets to pin a zone.
pub const ZONE_HEADER: &str = "ramen-zone";
