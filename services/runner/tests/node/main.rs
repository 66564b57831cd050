//! Integration tests of the worker node against the real Python runtime, driven over HTTP
//! (raw requests for transport rules) and by the official Python MCP client.

mod modern;
mod pyclient;
mod support;

mod access;
mod blocking;
mod control;
mod crash;
mod drain;
mod environment;
mod errors;
mod kinds;
mod limits;
mod official;
mod records;
mod reload;
mod sandbox;
mod stateless;
mod transport;
