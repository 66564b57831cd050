//! The MCP endpoint of the node.

pub mod calls;
pub mod http;
pub mod jsonrpc;
mod methods;
pub mod session;
mod utilities;
