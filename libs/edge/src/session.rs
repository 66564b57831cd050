//! Sealed session ids: `base64url(nonce ‖ AES-256-GCM(worker address ‖ node session id))`.

use std::collections::HashMap;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use parking_lot::Mutex;
use rand::RngCore;
use sha2::{Digest, Sha256};

const NONCE: usize = 12;
/// AES-GCM's authentication tag, after the ciphertext.
const TAG: usize = 16;
/// Sealed ids up to this many bytes are opened without a heap buffer: a worker's `host:port`
/// and a node's session id take well under it.
const OPEN_ON_STACK: usize = 512;
/// How many opened ids are remembered. A client sends its session's id on every request, and
/// opening one (decoding and decrypting) is ~2.5k instructions of the edge's ~54k per proxied
/// call; looking it up instead saved ~2k of them. Past this many the memory is cleared and
/// fills again with the sessions in use: a bound, not an eviction policy worth more code.
const REMEMBERED: usize = 4096;

#[derive(Clone)]
pub struct SessionSealer {
    cipher: Aes256Gcm,
    /// Ids this key opened, by their exact text. Only an id that opened is remembered, so an
    /// id is never opened by memory that decryption would refuse; shared by the clones, which
    /// hold the same key.
    opened: Arc<Mutex<HashMap<Box<str>, OpenedSession, foldhash::fast::RandomState>>>,
}

/// What a sealed id says: the worker that holds the session, and the node's own id for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedSession {
    pub worker: Arc<str>,
    pub node_session: Arc<str>,
}

impl SessionSealer {
    /// Derives the edge's own key from a process secret (the sealing key), so every gateway
    /// replica sharing that secret can open every other replica's session ids.
    pub fn from_secret(secret: &[u8]) -> Self {
        let key =
            Sha256::new().chain_update(b"ramen-edge-session-v1").chain_update(secret).finalize();
        Self { cipher: Aes256Gcm::new(&key), opened: Arc::default() }
    }

    pub fn seal(&self, worker: &str, node_session: &str) -> String {
        let mut nonce = [0u8; NONCE];
        rand::thread_rng().fill_bytes(&mut nonce);
        let plain = format!("{worker}\n{node_session}");
        // Encryption with a fresh random nonce cannot fail for inputs this small.
        let sealed =
            self.cipher.encrypt(Nonce::from_slice(&nonce), plain.as_bytes()).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        B64.encode(out)
    }

    /// The worker and node session `token` names, or `None` for anything not sealed by this
    /// key. Every request of a session opens its id: one already opened is looked up.
    pub fn open(&self, token: &str) -> Option<OpenedSession> {
        if let Some(opened) = self.opened.lock().get(token) {
            return Some(opened.clone());
        }
        let opened = self.decrypt(token)?;
        // Short ids only (a worker's `host:port` and a node's session id make one): the memory
        // stays within REMEMBERED × OPEN_ON_STACK bytes of ids, whatever clients present.
        if token.len() <= OPEN_ON_STACK {
            let mut remembered = self.opened.lock();
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.insert(token.into(), opened.clone());
        }
        Some(opened)
    }

    /// Decoded and decrypted in place, on the stack for any id this edge seals.
    fn decrypt(&self, token: &str) -> Option<OpenedSession> {
        let mut stack = [0u8; OPEN_ON_STACK];
        let mut heap = Vec::new();
        let room = token.len().div_ceil(4) * 3;
        let buffer = if room <= OPEN_ON_STACK {
            &mut stack[..]
        } else {
            heap.resize(room, 0);
            &mut heap[..]
        };
        let len = B64.decode_slice(token, buffer).ok()?;
        if len < NONCE + TAG {
            return None;
        }
        let (nonce, rest) = buffer[..len].split_at_mut(NONCE);
        let (plain, tag) = rest.split_at_mut(rest.len() - TAG);
        let tag = Tag::from_slice(tag);
        let nonce = Nonce::from_slice(nonce);
        self.cipher.decrypt_in_place_detached(nonce, b"", plain, tag).ok()?;
        let text = std::str::from_utf8(plain).ok()?;
        let (worker, node_session) = text.split_once('\n')?;
        Some(OpenedSession { worker: worker.into(), node_session: node_session.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// What is sealed opens to itself, only with the same secret, and not once any byte of
        /// the token changes; nothing else opens at all.
        #[test]
        fn only_sealed_ids_open(worker in "[^\n]{0,40}", session in any::<String>(), flip in any::<usize>(), junk in any::<String>()) {
            let sealer = SessionSealer::from_secret(b"secret-a");
            let token = sealer.seal(&worker, &session);
            prop_assert_eq!(opened(&sealer, &token), Some((worker.clone(), session.clone())));
            // Remembered now: the same again, and still only for this key and these bytes.
            prop_assert_eq!(opened(&sealer, &token), Some((worker.clone(), session.clone())));
            prop_assert_eq!(SessionSealer::from_secret(b"secret-b").open(&token), None);
            let mut raw = B64.decode(&token).unwrap();
            let i = flip % raw.len();
            raw[i] ^= 0x01;
            prop_assert_eq!(sealer.open(&B64.encode(raw)), None);
            prop_assert_eq!(sealer.open(&junk), None);
        }
    }

    fn opened(sealer: &SessionSealer, token: &str) -> Option<(String, String)> {
        sealer.open(token).map(|o| (o.worker.to_string(), o.node_session.to_string()))
    }

    /// Opened ids are remembered up to a bound: past it the memory starts again, and an id
    /// forgotten opens all the same.
    #[test]
    fn remembered_ids_are_bounded() {
        let sealer = SessionSealer::from_secret(b"secret-a");
        let first = sealer.seal("127.0.0.1:8001", "s0");
        assert!(sealer.open(&first).is_some());
        assert_eq!(sealer.opened.lock().len(), 1, "an opened id is remembered");
        assert_eq!(sealer.open("not-sealed"), None);
        assert_eq!(sealer.opened.lock().len(), 1, "one that did not open is not");
        for i in 1..=REMEMBERED {
            assert!(sealer.open(&sealer.seal("127.0.0.1:8001", &format!("s{i}"))).is_some());
            assert!(sealer.opened.lock().len() <= REMEMBERED);
        }
        assert!(!sealer.opened.lock().contains_key(first.as_str()), "cleared at the bound");
        assert_eq!(opened(&sealer, &first), Some(("127.0.0.1:8001".into(), "s0".into())));
    }

    #[test]
    fn seals_and_refuses_forgeries() {
        let sealer = SessionSealer::from_secret(b"secret-a");
        let token = sealer.seal("127.0.0.1:8001", "abc123");
        assert!(!token.contains("8001") && !token.contains("abc123"), "the client cannot read it");
        assert_eq!(opened(&sealer, &token), Some(("127.0.0.1:8001".into(), "abc123".into())));
        assert_eq!(SessionSealer::from_secret(b"secret-b").open(&token), None, "another key");
        let mut raw = B64.decode(&token).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        assert_eq!(sealer.open(&B64.encode(raw)), None, "tampered");
        assert_eq!(sealer.open("abc123"), None, "a bare node session id");
        assert_ne!(sealer.seal("a", "b"), sealer.seal("a", "b"), "fresh nonce each time");
    }

    /// An id too long for the stack buffer opens all the same, and tampering still shows.
    #[test]
    fn long_ids_open_too() {
        let sealer = SessionSealer::from_secret(b"secret-a");
        let worker = format!("{}.svc.cluster.local:8001", "w".repeat(300));
        let session = "s".repeat(400);
        let token = sealer.seal(&worker, &session);
        assert!(token.len().div_ceil(4) * 3 > OPEN_ON_STACK, "the heap path is taken");
        assert_eq!(opened(&sealer, &token), Some((worker, session)));
        assert!(sealer.opened.lock().is_empty(), "a long id is not remembered");
        let mut raw = B64.decode(&token).unwrap();
        raw[NONCE] ^= 1;
        assert_eq!(sealer.open(&B64.encode(raw)), None, "tampered");
        assert_eq!(sealer.open(&B64.encode([0u8; NONCE + TAG - 1])), None, "shorter than a tag");
    }
}
