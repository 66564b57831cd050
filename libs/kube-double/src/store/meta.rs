//! Object metadata the apiserver owns: timestamps, uids, generated names, and small JSON
//! accessors shared by the store and the controllers.

use rand::Rng;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;

/// The alphabet of generated name suffixes (`k8s.io/apimachinery/pkg/util/rand`): no vowels,
/// so generated names never spell words, and no look-alike characters.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// RFC 3339 with second precision, as `metav1.Time` serialises.
pub fn now() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    now.format(&Rfc3339).unwrap_or_default()
}

pub fn random_suffix(len: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..len).map(|_| SAFE_ALPHABET[rng.gen_range(0..SAFE_ALPHABET.len())] as char).collect()
}

/// Encodes a hash with the safe alphabet, as `rand.SafeEncodeString` does for
/// `pod-template-hash`.
pub fn safe_encode(mut value: u32) -> String {
    let mut out = String::new();
    while value > 0 || out.is_empty() {
        out.push(SAFE_ALPHABET[(value % SAFE_ALPHABET.len() as u32) as usize] as char);
        value /= SAFE_ALPHABET.len() as u32;
    }
    out
}

/// FNV-1a, the hash the deployment controller uses for `pod-template-hash`.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

pub fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

pub fn namespace(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default()
}

pub fn uid(obj: &Value) -> &str {
    obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

pub fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default()
}

pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    strings(obj.pointer("/metadata/finalizers"))
}

pub fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

pub fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `obj.metadata`, created when missing so callers can write into it.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let root = obj.as_object_mut().expect("made an object above");
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("made an object above")
}

/// The uids of the objects that own `obj`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(|r| r.get("uid")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_encoding_uses_only_the_safe_alphabet() {
        let text = safe_encode(fnv32a(b"template"));
        assert!(text.bytes().all(|b| SAFE_ALPHABET.contains(&b)), "{text}");
        assert_eq!(random_suffix(5).len(), 5);
    }

    #[test]
    fn timestamps_round_trip() {
        assert!(time::OffsetDateTime::parse(&now(), &Rfc3339).is_ok());
        assert!(now().ends_with('Z'));
    }
}
