//! The relying-party side of OpenID Connect, for people signing in to ramen (the console and
//! `ramen login --sso`) with their organisation's identity provider:
//!
//! - [`Client::begin`]: the authorization request — authorization code with PKCE (S256), a
//!   fresh `state` and `nonce` — whose secrets the caller keeps until the callback;
//! - [`Client::finish`]: the code exchanged at the token endpoint (with the PKCE verifier and,
//!   for a confidential client, its secret), the ID token verified against the provider's
//!   published keys (signature, `iss`, `aud` = this client, `exp`, `nonce`), then the
//!   userinfo endpoint read for the claims providers keep out of ID tokens (groups, email).
//!
//! Keys come from `ramen-oauth-resource`'s [`Issuers`] (discovery, JWKS cache, rotation), the
//! same code that verifies MCP callers' access tokens.

mod client;
mod pkce;

pub use client::{Begun, Client, ClientConfig, Identity, OidcError};
pub use pkce::{challenge, random_token};
pub use ramen_oauth_resource::{Issuers, url_form};
