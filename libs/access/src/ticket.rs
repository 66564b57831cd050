//! The caller's ticket: how a [`Caller`] travels between services, in the `x-ramen-caller`
//! metadata of every call.
//!
//! `v1.<payload>.<signature>`: the payload is base64url JSON (actor, request id, grants,
//! audience, expiry in ms), the signature base64url HMAC-SHA256 of `v1.<payload>` under the
//! key of the ticket's audience ([`crate::audience`]). Audience keys are derived from a master
//! key, itself derived from the control plane's signing secret (`RAMEN_JWT_SECRET`; during a
//! rotation the previous one verifies too):
//! `K_aud = HMAC(K_master, "ramen/caller-ticket/audience/v1/" + aud)`.
//! A verifier holds its own audience's keys ([`AudienceKeys`]) and checks with nothing else, so
//! a ticket meant for another audience never verifies; and a holder of one audience's key (a
//! worker node is given its placement's) can sign for that audience only.
//! Tickets live [`crate::audience::ttl`]: five minutes for services, one for worker nodes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::audience;
use crate::caller::{Caller, Grants};

type HmacSha256 = Hmac<Sha256>;

/// The metadata key a ticket travels in.
pub const TICKET_HEADER: &str = "x-ramen-caller";
const VERSION: &str = "v1";
const AUDIENCE_LABEL: &str = "ramen/caller-ticket/audience/v1/";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TicketError {
    #[error(
        "the call carries no caller ticket ({TICKET_HEADER}); calls between ramen services are signed"
    )]
    Missing,
    #[error("the caller ticket is malformed: {0}")]
    Malformed(&'static str),
    #[error("the caller ticket's signature does not verify (signed with another key?)")]
    BadSignature,
    /// Signed for someone else: a ticket is good only where its signer meant it to go.
    #[error("the caller ticket is meant for {meant_for:?}, not {expected:?}")]
    WrongAudience { meant_for: String, expected: String },
    /// Tickets before audiences (a process of an older release still running in a rollout).
    #[error("the caller ticket names no audience (signed by an older ramen than its verifier?)")]
    NoAudience,
    #[error("the caller ticket expired {0} ms ago")]
    Expired(i64),
}

#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "a", default)]
    actor: String,
    #[serde(rename = "r", default, skip_serializing_if = "String::is_empty")]
    request_id: String,
    #[serde(rename = "g", default)]
    grants: Grants,
    #[serde(rename = "u", default)]
    audience: String,
    #[serde(rename = "e")]
    expires_ms: i64,
}

/// The master keys: what the control plane holds, from which every audience's keys derive.
/// Signs for any audience and verifies as any; a process that serves one audience verifies
/// with [`TicketKeys::audience`] of it.
#[derive(Clone)]
pub struct TicketKeys {
    current: [u8; 32],
    previous: Option<[u8; 32]>,
}

impl std::fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TicketKeys(<redacted>)")
    }
}

/// A ticket key is not the signing secret itself: a ticket must never verify as an access
/// token, or the other way round.
fn derive(secret: &[u8]) -> [u8; 32] {
    hmac(secret, b"ramen/caller-ticket/v1")
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

impl TicketKeys {
    pub fn new(secret: &[u8], previous: Option<&[u8]>) -> Self {
        Self { current: derive(secret), previous: previous.map(derive) }
    }

    /// From the auth section every service loads (`RAMEN_JWT_SECRET`,
    /// `RAMEN_JWT_PREVIOUS_SECRET`).
    pub fn from_secrets(current: &str, previous: &str) -> Self {
        Self::new(current.as_bytes(), Some(previous.as_bytes()).filter(|p| !p.is_empty()))
    }

    /// The keys of `audience`, current and (during a rotation) previous: what a verifier of
    /// that audience holds — a worker node is given its placement's in its config.
    pub fn audience(&self, audience: &str) -> AudienceKeys {
        let derive =
            |master: &[u8; 32]| hmac(master, format!("{AUDIENCE_LABEL}{audience}").as_bytes());
        AudienceKeys {
            audience: audience.to_owned(),
            current: derive(&self.current),
            previous: self.previous.as_ref().map(derive),
        }
    }

    /// A ticket for `caller` that only `audience` accepts.
    pub fn sign(&self, caller: &Caller, audience: &str, now_ms: i64) -> String {
        self.audience(audience).sign(caller, now_ms)
    }

    /// The caller of `ticket`, if it was signed for `audience` and is still good.
    pub fn verify(&self, ticket: &str, audience: &str, now_ms: i64) -> Result<Caller, TicketError> {
        self.audience(audience).verify(ticket, now_ms)
    }
}

/// The keys of one audience: signs tickets for it and verifies tickets meant for it, and for
/// nothing else.
#[derive(Clone)]
pub struct AudienceKeys {
    audience: String,
    current: [u8; 32],
    previous: Option<[u8; 32]>,
}

impl std::fmt::Debug for AudienceKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AudienceKeys({:?}, <redacted>)", self.audience)
    }
}

impl AudienceKeys {
    /// Keys handed over already derived (a node's config carries its placement's).
    pub fn from_keys(audience: &str, current: [u8; 32], previous: Option<[u8; 32]>) -> Self {
        Self { audience: audience.to_owned(), current, previous }
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The current key, then the previous one during a rotation.
    pub fn keys(&self) -> impl Iterator<Item = &[u8; 32]> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }

    pub fn sign(&self, caller: &Caller, now_ms: i64) -> String {
        let payload = Payload {
            actor: caller.actor.clone(),
            request_id: caller.request_id.clone(),
            grants: caller.grants.clone(),
            audience: self.audience.clone(),
            expires_ms: now_ms + audience::ttl(&self.audience).as_millis() as i64,
        };
        let json = serde_json::to_vec(&payload).expect("a ticket serializes");
        let signed = format!("{VERSION}.{}", B64URL.encode(json));
        let signature = B64URL.encode(hmac(&self.current, signed.as_bytes()));
        format!("{signed}.{signature}")
    }

    /// The caller of the ticket a request carries (`None`: it carries none).
    pub fn verify_header(&self, ticket: Option<&str>, now_ms: i64) -> Result<Caller, TicketError> {
        self.verify(ticket.ok_or(TicketError::Missing)?, now_ms)
    }

    pub fn verify(&self, ticket: &str, now_ms: i64) -> Result<Caller, TicketError> {
        let (signed, signature) =
            ticket.rsplit_once('.').ok_or(TicketError::Malformed("no signature"))?;
        let (version, payload) =
            signed.split_once('.').ok_or(TicketError::Malformed("no payload"))?;
        if version != VERSION {
            return Err(TicketError::Malformed("unknown version"));
        }
        let signature =
            B64URL.decode(signature).map_err(|_| TicketError::Malformed("signature encoding"))?;
        let good = self.keys().any(|key| verify_mac(key, signed, &signature));
        let payload = decode(payload);
        if !good {
            // Unverified, so only to say why: a ticket for someone else is the likely mistake.
            return Err(match payload {
                Ok(payload) if payload.audience != self.audience => self.meant_for(payload),
                _ => TicketError::BadSignature,
            });
        }
        let payload = payload?;
        if payload.audience != self.audience {
            return Err(self.meant_for(payload));
        }
        if payload.expires_ms < now_ms {
            return Err(TicketError::Expired(now_ms - payload.expires_ms));
        }
        Ok(Caller { actor: payload.actor, request_id: payload.request_id, grants: payload.grants })
    }

    fn meant_for(&self, payload: Payload) -> TicketError {
        if payload.audience.is_empty() {
            return TicketError::NoAudience;
        }
        TicketError::WrongAudience { meant_for: payload.audience, expected: self.audience.clone() }
    }
}

fn decode(payload: &str) -> Result<Payload, TicketError> {
    let json = B64URL.decode(payload).map_err(|_| TicketError::Malformed("payload encoding"))?;
    serde_json::from_slice(&json).map_err(|_| TicketError::Malformed("payload"))
}

fn verify_mac(key: &[u8; 32], message: &str, signature: &[u8]) -> bool {
    let mut mac = HmacSha256::new_from_slice(key).expect("32-byte key");
    mac.update(message.as_bytes());
    mac.verify_slice(signature).is_ok()
}

/// Milliseconds since the Unix epoch, the clock tickets are stamped with.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "ticket_tests.rs"]
mod tests;
