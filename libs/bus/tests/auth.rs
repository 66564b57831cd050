//! The bus's authentication and least privilege against a real nats-server in operator mode
//! (`ramen_bus::testing::OperatorNats`): what each user may do works, and every reach beyond
//! it — a node publishing an event or another node's load, a service deleting a stream or
//! taking another's lease — is refused by the server.

#[path = "auth/nodes.rs"]
mod nodes;
#[path = "auth/services.rs"]
mod services;
#[path = "auth/support.rs"]
mod support;
#[path = "auth/upgrade.rs"]
mod upgrade;
