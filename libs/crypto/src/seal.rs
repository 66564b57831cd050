//! Sealed secrets: AES-256-GCM under `RAMEN_SECRETS_KEY`, a fresh random 96-bit nonce per
//! seal, and the record's id as associated data, so a sealed value copied onto another record
//! (another group, scope or name) does not open. Each sealed value names its key by id; after
//! a rotation the previous key (`RAMEN_SECRETS_PREVIOUS_KEY`) still opens old values until
//! `ramen admin reseal` has re-sealed them under the current one.
//!
//! Failures are closed and say nothing about the value: a wrong key or a tampered ciphertext
//! is `SealError::Corrupt`, an unknown key id is `SealError::UnknownKey`.

use std::fmt;

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A sealed value as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    pub key_id: String,
    /// Base64 of the 12-byte nonce.
    pub nonce: String,
    /// Base64 of ciphertext + tag.
    pub ciphertext: String,
}

/// An unsealed value. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself; only for handing it to whoever asked for it, never for logs.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn into_inner(self) -> String {
        self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error(
        "sealed with key `{key_id}`, which is neither the current nor the previous secrets key"
    )]
    UnknownKey { key_id: String },
    #[error("sealed value does not open (wrong key or tampered)")]
    Corrupt,
}

struct SealKey {
    id: String,
    cipher: Aes256Gcm,
}

impl SealKey {
    fn new(key: &[u8; 32]) -> Self {
        let digest =
            Sha256::new().chain_update(b"ramen/secrets-key-id/").chain_update(key).finalize();
        Self { id: format!("s{}", &hex::encode(digest)[..12]), cipher: Aes256Gcm::new(key.into()) }
    }
}

pub struct Sealer {
    current: SealKey,
    previous: Option<SealKey>,
}

impl Sealer {
    pub fn new(current: &[u8; 32], previous: Option<&[u8; 32]>) -> Self {
        Self { current: SealKey::new(current), previous: previous.map(SealKey::new) }
    }

    pub fn from_config(auth: &ramen_config::AuthConfig) -> Result<Self, ramen_config::ConfigError> {
        let current = ramen_config::decode_secrets_key(&auth.secrets_key)?;
        let previous = if auth.secrets_previous_key.is_empty() {
            None
        } else {
            Some(ramen_config::decode_secrets_key(&auth.secrets_previous_key)?)
        };
        Ok(Self::new(&current, previous.as_ref()))
    }

    pub fn current_key_id(&self) -> &str {
        &self.current.id
    }

    /// Seals `value` for the record `aad` (its id) under the current key.
    pub fn seal(&self, aad: &str, value: &SecretValue) -> Sealed {
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let payload = Payload { msg: value.expose().as_bytes(), aad: aad.as_bytes() };
        // Encryption fails only for inputs beyond GCM's 64 GiB limit, far above the value cap.
        let ciphertext =
            self.current.cipher.encrypt(Nonce::from_slice(&nonce), payload).expect("AES-GCM seal");
        Sealed {
            key_id: self.current.id.clone(),
            nonce: B64.encode(nonce),
            ciphertext: B64.encode(ciphertext),
        }
    }

    pub fn unseal(&self, aad: &str, sealed: &Sealed) -> Result<SecretValue, SealError> {
        let key = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|k| k.id == sealed.key_id)
            .ok_or_else(|| SealError::UnknownKey { key_id: sealed.key_id.clone() })?;
        let nonce = B64.decode(&sealed.nonce).map_err(|_| SealError::Corrupt)?;
        let ciphertext = B64.decode(&sealed.ciphertext).map_err(|_| SealError::Corrupt)?;
        if nonce.len() != 12 {
            return Err(SealError::Corrupt);
        }
        let payload = Payload { msg: &ciphertext, aad: aad.as_bytes() };
        let plain = key
            .cipher
            .decrypt(Nonce::from_slice(&nonce), payload)
            .map_err(|_| SealError::Corrupt)?;
        String::from_utf8(plain).map(SecretValue).map_err(|_| SealError::Corrupt)
    }

    /// Whether a value sealed under `key_id` can be opened here (the current or the previous
    /// key). Key ids are derived from the keys, so this needs no ciphertext.
    pub fn knows_key(&self, key_id: &str) -> bool {
        [Some(&self.current), self.previous.as_ref()].into_iter().flatten().any(|k| k.id == key_id)
    }

    /// Whether `sealed` is under a key other than the current one.
    pub fn is_stale(&self, sealed: &Sealed) -> bool {
        sealed.key_id != self.current.id
    }

    /// Opens `sealed` (current or previous key) and seals it again under the current key.
    pub fn reseal(&self, aad: &str, sealed: &Sealed) -> Result<Sealed, SealError> {
        Ok(self.seal(aad, &self.unseal(aad, sealed)?))
    }
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
