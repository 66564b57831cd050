use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A configuration value that must never be printed: `Debug` and `Display` show a redaction,
/// and serializing it (e.g. when dumping the effective config) writes the redaction too.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself; call only where it is used, never to log.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "Secret(<empty>)" } else { "Secret(<redacted>)" })
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Defaults are serialized into figment's base layer; an empty secret must stay empty so
        // the "missing" check sees it, and a set one must never leave the process in a dump.
        serializer.serialize_str(if self.0.is_empty() { "" } else { "<redacted>" })
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}
