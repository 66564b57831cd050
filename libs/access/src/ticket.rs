//! The caller's ticket: how a [`Caller`] travels between services, in the `x-ramen-caller`
//! metadata of every call.
//!
//! `v1.<payload>.<signature>`: the payload is base64url JSON (actor, request id, grants,
//! expiry in ms), the signature base64url HMAC-SHA256 of `v1.<payload>` under a key derived
//! from the control plane's signing secret (`RAMEN_JWT_SECRET`; during a rotation the previous
//! one verifies too). Tickets live [`TTL`]: long enough for any clock skew between replicas,
//! short enough that a ticket seen on the wire is soon worthless.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::caller::{Caller, Grants};

type HmacSha256 = Hmac<Sha256>;

/// The metadata key a ticket travels in.
pub const TICKET_HEADER: &str = "x-ramen-caller";
/// How long a ticket is good for after it was signed.
pub const TTL: Duration = Duration::from_secs(300);
const VERSION: &str = "v1";

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
    #[serde(rename = "e")]
    expires_ms: i64,
}

/// The keys tickets are signed and verified with.
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
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"ramen/caller-ticket/v1");
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

    pub fn sign(&self, caller: &Caller, now_ms: i64) -> String {
        let payload = Payload {
            actor: caller.actor.clone(),
            request_id: caller.request_id.clone(),
            grants: caller.grants.clone(),
            expires_ms: now_ms + TTL.as_millis() as i64,
        };
        let json = serde_json::to_vec(&payload).expect("a ticket serializes");
        let signed = format!("{VERSION}.{}", B64URL.encode(json));
        let signature = B64URL.encode(mac(&self.current, &signed));
        format!("{signed}.{signature}")
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
        let good = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .any(|key| verify_mac(key, signed, &signature));
        if !good {
            return Err(TicketError::BadSignature);
        }
        let json =
            B64URL.decode(payload).map_err(|_| TicketError::Malformed("payload encoding"))?;
        let payload: Payload =
            serde_json::from_slice(&json).map_err(|_| TicketError::Malformed("payload"))?;
        if payload.expires_ms < now_ms {
            return Err(TicketError::Expired(now_ms - payload.expires_ms));
        }
        Ok(Caller { actor: payload.actor, request_id: payload.request_id, grants: payload.grants })
    }
}

fn mac(key: &[u8; 32], message: &str) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("32-byte key");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().to_vec()
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
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::Role;

    fn caller() -> Caller {
        let grants = Grants {
            super_admin: false,
            must_change_password: false,
            groups: BTreeMap::from([("team-a".to_owned(), Role::Admin)]),
        };
        Caller::user("u-1", "req-9", grants)
    }

    #[test]
    fn a_signed_caller_verifies_as_itself() {
        let keys = TicketKeys::new(b"0123456789abcdef0123456789abcdef", None);
        let ticket = keys.sign(&caller(), 1_000);
        assert_eq!(keys.verify(&ticket, 2_000), Ok(caller()));
    }

    #[test]
    fn another_key_a_tampered_payload_or_an_old_ticket_is_refused() {
        let keys = TicketKeys::new(b"0123456789abcdef0123456789abcdef", None);
        let other = TicketKeys::new(b"another-secret-another-secret-xx", None);
        let ticket = keys.sign(&caller(), 1_000);
        assert_eq!(other.verify(&ticket, 1_000), Err(TicketError::BadSignature));

        let mut forged = caller();
        forged.grants.super_admin = true;
        let forged_ticket = other.sign(&forged, 1_000);
        let payload = forged_ticket.split('.').nth(1).unwrap();
        let signature = ticket.rsplit('.').next().unwrap();
        let spliced = format!("v1.{payload}.{signature}");
        assert_eq!(keys.verify(&spliced, 1_000), Err(TicketError::BadSignature));

        let late = 1_000 + TTL.as_millis() as i64 + 5;
        assert_eq!(keys.verify(&ticket, late), Err(TicketError::Expired(5)));
        assert!(matches!(keys.verify("v1.abc", 0), Err(TicketError::Malformed(_))));
        assert!(matches!(keys.verify("v2.a.b", 0), Err(TicketError::Malformed(_))));
    }

    #[test]
    fn the_previous_secret_still_verifies_during_a_rotation() {
        let old = TicketKeys::new(b"old-secret-old-secret-old-secret", None);
        let rotated = TicketKeys::new(
            b"new-secret-new-secret-new-secret",
            Some(b"old-secret-old-secret-old-secret"),
        );
        let ticket = old.sign(&caller(), 0);
        assert_eq!(rotated.verify(&ticket, 0), Ok(caller()));
    }
}
