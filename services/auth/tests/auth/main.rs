//! `auth` over real gRPC, a real `nats-server` and the embedded store.

mod access;
mod audit;
mod bootstrap;
mod calls;
mod keys;
mod secrets;
mod service_account;
mod sessions;
mod sso;
mod support;
