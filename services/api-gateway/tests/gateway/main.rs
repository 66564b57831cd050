//! The api-gateway over real HTTP, in front of a real auth gRPC server, a real `nats-server`
//! (and a real `redis-server` where rate limits are shared).

mod bodies;
mod bounds;
mod calls;
mod client_addr;
mod console;
mod console_calls;
mod edge_keys;
mod environments;
mod login_csrf;
mod matrix;
mod members;
mod openapi;
mod rate_limit;
mod revocation;
mod sessions;
mod support;
mod tokens;
