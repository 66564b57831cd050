//! Arguments as a record keeps them: a value stored under a name that says it is a secret
//! (`password`, `token`, `api_key`, …) is replaced whole, and so is any string holding one of
//! the environment's secret values (the node has them: it hands them to the group's code).
//! What is left is what a reviewer may read.

use serde_json::{Map, Value};

/// What a redacted value reads as.
pub const REDACTED: &str = "[redacted]";

/// Parts of a field name that mark its value secret, compared without case.
const SECRET_NAMES: [&str; 9] = [
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "private_key",
];

/// Secret values shorter than this are not searched for: a one-letter "secret" would redact
/// every string.
const MIN_SECRET_CHARS: usize = 4;

fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase().replace('-', "_");
    SECRET_NAMES.iter().any(|part| lower.contains(part))
}

/// `arguments` with secret-named fields and strings holding any of `secrets` replaced by
/// [`REDACTED`].
pub fn redact(arguments: &Value, secrets: &[&str]) -> Value {
    let secrets: Vec<&str> =
        secrets.iter().copied().filter(|s| s.chars().count() >= MIN_SECRET_CHARS).collect();
    walk(arguments, &secrets)
}

fn walk(value: &Value, secrets: &[&str]) -> Value {
    match value {
        Value::String(text) if secrets.iter().any(|s| text.contains(s)) => REDACTED.into(),
        Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, secrets)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, v)| {
                    let kept = if secret_name(name) { REDACTED.into() } else { walk(v, secrets) };
                    (name.clone(), kept)
                })
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_names_and_secret_values_are_replaced_anywhere() {
        let arguments = json!({
            "city": "Lisbon",
            "Api-Key": "abc",
            "auth": {"password": "hunter2", "user": "ana"},
            "notes": ["plain", "Bearer s3cr3t-value here"],
            "count": 3,
        });
        let kept = redact(&arguments, &["s3cr3t-value", "x"]);
        assert_eq!(
            kept,
            json!({
                "city": "Lisbon",
                "Api-Key": REDACTED,
                "auth": {"password": REDACTED, "user": "ana"},
                "notes": ["plain", REDACTED],
                "count": 3,
            })
        );
    }

    #[test]
    fn short_secret_values_do_not_redact_everything() {
        assert_eq!(redact(&json!({"a": "xyz"}), &["x"]), json!({"a": "xyz"}));
    }
}
