//! Integration tests of the worker node against the real Python runtime, driven over HTTP
//! (raw requests for transport rules) and by the official Python MCP client.

mod support;

mod transport;
