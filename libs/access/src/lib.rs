//! Who is calling a ramen service and what they may do — the one trust model
//! (docs/architecture.md, "Trust between services"):
//!
//! - [`rule`]: the one authorization rule ([`decide`]) every service applies to its own RPCs;
//! - [`Caller`]: who is calling (a user with their [`Grants`], or a service acting on its own),
//!   with the request id of the call that started it all;
//! - [`ticket`]: how a caller travels between services — an HMAC-signed ticket in the
//!   `x-ramen-caller` metadata, minted by the api-gateway for a user it authenticated (with the
//!   grants auth answered for this very request) or by a service for itself, and verified by
//!   every service before any handler runs. A call without a valid ticket is refused, so nothing
//!   inside the cluster can claim to be someone it is not without the control plane's key;
//! - [`audience`]: who a ticket is for — each service by name, worker nodes by placement; a
//!   ticket verifies only where it was meant to go.

pub mod audience;
mod caller;
pub mod rule;
pub mod ticket;

pub use caller::{Caller, Grants, Refusal, SERVICE_ACTORS};
pub use rule::{Need, Role, Standing, decide, need};
pub use ticket::{AudienceKeys, TICKET_HEADER, TicketError, TicketKeys};
