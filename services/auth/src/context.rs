//! Who is calling: the caller every service reads from the `x-ramen-actor` and `x-request-id`
//! metadata ([`ramen_service::Caller`]), named `Ctx` in auth's functions.

pub use ramen_service::caller::{Caller as Ctx, SERVICE_ACTORS};
