//! The key a node verifies the control plane's calls with, as its config file carries it.
//!
//! The zone-manager derives it for the node's placement (`runner:<group>/<zone>`,
//! `ramen_access::TicketKeys::audience`) and writes it into the config: the node holds no
//! control-plane key, and what it holds verifies — and could sign — tickets for its own
//! placement's nodes only. The file is written 0600 (a Kubernetes Secret on clusters), so the
//! value is written as is; only `Debug` (logs) hides it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 32-byte ticket key, base64 in the config file.
#[derive(Clone, PartialEq, Eq)]
pub struct TicketKey([u8; 32]);

impl TicketKey {
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key itself; for the verifier only, never to log.
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for TicketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TicketKey(<redacted>)")
    }
}

impl Serialize for TicketKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The config file is the only place a node config is serialized to, and it must carry
        // the key for the node to read it back.
        serializer.serialize_str(&B64.encode(self.0))
    }
}

impl<'de> Deserialize<'de> for TicketKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = B64
            .decode(text.trim())
            .map_err(|_| serde::de::Error::custom("a ticket key is base64 (of 32 bytes)"))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
            serde::de::Error::custom(format!("a ticket key is 32 bytes, not {}", b.len()))
        })?;
        Ok(Self(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct File {
        key: TicketKey,
    }

    #[test]
    fn the_file_round_trips_logs_see_nothing() {
        let key = TicketKey::new([7; 32]);
        let text = toml::to_string(&File { key: key.clone() }).unwrap();
        assert_eq!(text.trim(), format!("key = \"{}\"", B64.encode([7; 32])));
        assert_eq!(toml::from_str::<File>(&text).unwrap().key, key);
        assert_eq!(format!("{key:?}"), "TicketKey(<redacted>)");
        let short = toml::from_str::<File>(&format!("key = \"{}\"", B64.encode([1; 16])));
        assert!(short.err().unwrap().to_string().contains("32 bytes, not 16"));
        let garbage = toml::from_str::<File>("key = \"not base64!\"");
        assert!(garbage.err().unwrap().to_string().contains("base64"));
    }
}
