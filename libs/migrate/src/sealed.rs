use std::collections::BTreeSet;
use std::path::Path;

use ramen_crypto::seal::{Sealed, Sealer};
use ramen_store::{DocumentStore, Query};
use serde_json::Value;

use crate::MigrateError;

/// The sealed values found in a store, and those whose key the checking sealer did not know.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SealedScan {
    /// `(collection/id, key id)` of every sealed value, in store order.
    found: Vec<(String, String)>,
}

/// Finds every sealed value in every document of `store`. Sealed values are recognised by
/// their shape (an object of exactly `key_id`, `nonce` and `ciphertext`, the stored form of
/// [`Sealed`]) wherever they sit, so a service that seals something new is covered without
/// a list to keep up to date.
pub async fn scan_sealed(store: &dyn DocumentStore) -> Result<SealedScan, MigrateError> {
    let mut scan = SealedScan::default();
    let collections = store
        .collections()
        .await
        .map_err(|source| MigrateError::source_store("the list of collections", source))?;
    for coll in collections {
        let docs = store
            .find(&coll, &Query::default())
            .await
            .map_err(|source| MigrateError::source_store(format!("collection {coll}"), source))?;
        for stored in docs {
            let mut keys = Vec::new();
            sealed_keys(&stored.doc, &mut keys);
            for key in keys {
                scan.found.push((format!("{coll}/{}", stored.id), key));
            }
        }
    }
    Ok(scan)
}

impl SealedScan {
    /// How many sealed values the store holds.
    pub fn sealed(&self) -> u64 {
        self.found.len() as u64
    }

    /// Fails unless `sealer` opens every sealed value, with a hint naming the data dir's key
    /// file when that is the key that would.
    pub fn check(&self, sealer: &Sealer, key_file: Option<&Path>) -> Result<(), MigrateError> {
        let unknown: Vec<&(String, String)> =
            self.found.iter().filter(|(_, key)| !sealer.knows_key(key)).collect();
        let Some((example, _)) = unknown.first() else { return Ok(()) };
        let found: BTreeSet<&str> = unknown.iter().map(|(_, key)| key.as_str()).collect();
        let file_key = key_file.and_then(|file| key_id_of_file(file).map(|id| (file, id)));
        let hint = match file_key {
            Some((file, id)) if found.contains(id.as_str()) => format!(
                "the key `ramen up` generated opens them: export RAMEN_SECRETS_KEY=\"$(cat {})\"",
                file.display()
            ),
            _ => "set RAMEN_SECRETS_KEY to the key `ramen up` ran with (and keep it for the \
                  cloud services)"
                .to_owned(),
        };
        Err(MigrateError::WrongSecretsKey {
            count: unknown.len() as u64,
            configured: sealer.current_key_id().to_owned(),
            found: found.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
            example: example.clone(),
            hint,
        })
    }
}

fn sealed_keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let shaped = map.len() == 3
                && ["key_id", "nonce", "ciphertext"]
                    .iter()
                    .all(|k| map.get(*k).is_some_and(Value::is_string));
            if shaped && let Ok(sealed) = serde_json::from_value::<Sealed>(value.clone()) {
                out.push(sealed.key_id);
                return;
            }
            map.values().for_each(|v| sealed_keys(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| sealed_keys(v, out)),
        _ => {}
    }
}

/// The key id of a base64 key file, if it holds a valid key.
fn key_id_of_file(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let key = ramen_config::decode_secrets_key(&ramen_config::Secret::new(text.trim())).ok()?;
    Some(Sealer::new(&key, None).current_key_id().to_owned())
}
