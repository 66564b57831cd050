//! HS256 access tokens (RFC 7519 / 7515), written out rather than taken from a general JOSE
//! library because ramen accepts exactly one shape: a header `{"alg":"HS256","typ":"JWT",
//! "kid":…}` whose `kid` names one of the configured signing keys. Every other header — `alg:
//! none`, another algorithm, a missing or unknown `kid` — is refused before any signature work,
//! so there is no algorithm-confusion path to get wrong.
//!
//! Rotation: tokens are signed with the current key (`RAMEN_JWT_SECRET`); verification also
//! accepts the previous one (`RAMEN_JWT_PREVIOUS_SECRET`), so tokens issued before a rotation
//! stay valid until they expire (the access TTL, ~15 min).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// What an access token says. Times are JWT NumericDates (seconds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// The user id.
    pub sub: String,
    pub email: String,
    /// Super admin when issued (the gateway re-checks through `Authorize` for admin routes).
    #[serde(default)]
    pub sa: bool,
    /// Must change the password: the token is good for ChangePassword only.
    #[serde(default)]
    pub mcp: bool,
    pub iat: i64,
    pub exp: i64,
    /// The session (refresh-token family) the token was issued for: auth refuses the token
    /// once that session is signed out or ended by a password change. Empty in tokens issued
    /// before sessions were named (they live out their expiry).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sid: String,
    /// Id of the key that signed it (from the header; not part of the payload).
    #[serde(skip)]
    pub kid: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("malformed access token: {0}")]
    Malformed(&'static str),
    #[error("access token algorithm `{0}` is not accepted (HS256 only)")]
    Algorithm(String),
    #[error("access token was signed by an unknown key")]
    UnknownKey,
    #[error("access token signature does not verify")]
    Signature,
    #[error("access token expired")]
    Expired,
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    kid: Option<String>,
}

struct Key {
    id: String,
    secret: Vec<u8>,
}

impl Key {
    fn new(secret: &[u8]) -> Self {
        let digest =
            Sha256::new().chain_update(b"ramen/jwt-key-id/").chain_update(secret).finalize();
        Self { id: format!("j{}", &hex::encode(digest)[..12]), secret: secret.to_vec() }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes keys of any length, so this cannot fail.
        HmacSha256::new_from_slice(&self.secret).expect("HMAC accepts any key length")
    }
}

/// The signing key and the keys verification accepts.
pub struct TokenKeys {
    current: Key,
    previous: Option<Key>,
    ttl: Duration,
}

impl TokenKeys {
    pub fn new(current: &[u8], previous: Option<&[u8]>, ttl: Duration) -> Self {
        Self { current: Key::new(current), previous: previous.map(Key::new), ttl }
    }

    pub fn from_config(auth: &ramen_config::AuthConfig) -> Self {
        let previous = Some(auth.jwt_previous_secret.expose()).filter(|s| !s.is_empty());
        Self::new(auth.jwt_secret.expose().as_bytes(), previous.map(str::as_bytes), auth.access_ttl)
    }

    pub fn current_key_id(&self) -> &str {
        &self.current.id
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Signs a token for `claims` (its `iat` and `exp` are set here from `now_s`).
    pub fn issue(&self, mut claims: AccessClaims, now_s: i64) -> (String, AccessClaims) {
        claims.iat = now_s;
        claims.exp = now_s + self.ttl.as_secs() as i64;
        claims.kid = self.current.id.clone();
        let header =
            Header { alg: "HS256".into(), typ: Some("JWT".into()), kid: Some(claims.kid.clone()) };
        let signing_input = format!("{}.{}", encode_json(&header), encode_json(&claims));
        let mut mac = self.current.mac();
        mac.update(signing_input.as_bytes());
        let signature = B64URL.encode(mac.finalize().into_bytes());
        (format!("{signing_input}.{signature}"), claims)
    }

    /// Checks the header, the signature (constant time) and the expiry.
    pub fn verify(&self, token: &str, now_s: i64) -> Result<AccessClaims, TokenError> {
        let mut parts = token.trim().splitn(4, '.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed("expected three dot-separated parts"));
        };
        let head: Header = decode_json(header)?;
        if head.alg != "HS256" {
            // The caller's text, so cut short and escaped before it reaches a message.
            let shown: String =
                head.alg.chars().take(16).collect::<String>().escape_debug().collect();
            return Err(TokenError::Algorithm(shown));
        }
        if head.typ.as_deref().is_some_and(|t| !t.eq_ignore_ascii_case("JWT")) {
            return Err(TokenError::Malformed("header `typ` is not JWT"));
        }
        let kid = head.kid.ok_or(TokenError::UnknownKey)?;
        let key = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.id == kid)
            .ok_or(TokenError::UnknownKey)?;
        let signature = B64URL
            .decode(signature)
            .map_err(|_| TokenError::Malformed("signature is not base64url"))?;
        let mut mac = key.mac();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&signature).map_err(|_| TokenError::Signature)?;
        let mut claims: AccessClaims = decode_json(payload)?;
        if claims.sub.is_empty() {
            return Err(TokenError::Malformed("no subject"));
        }
        if claims.exp <= now_s {
            return Err(TokenError::Expired);
        }
        claims.kid = kid;
        Ok(claims)
    }
}

fn encode_json<T: Serialize>(value: &T) -> String {
    // Serializing these plain structs cannot fail.
    B64URL.encode(serde_json::to_vec(value).expect("claims serialize"))
}

fn decode_json<T: for<'de> Deserialize<'de>>(part: &str) -> Result<T, TokenError> {
    let bytes = B64URL.decode(part).map_err(|_| TokenError::Malformed("part is not base64url"))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| TokenError::Malformed("part is not the expected JSON"))
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
