//! The MCP endpoint of the node.

pub mod calls;
pub mod changes;
pub mod http;
#[cfg(test)]
mod json_values;
pub mod jsonrpc;
mod methods;
pub mod modern;
pub mod session;
mod tool_result;
mod utilities;
