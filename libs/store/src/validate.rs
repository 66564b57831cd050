//! Input checks shared by both adapters, so a name or document that MongoDB would refuse is
//! refused the same way in local mode, before any backend sees it.

use serde_json::Value;

use crate::StoreError;

/// Collection names: MongoDB's namespace limit (255 bytes with the database name) leaves room.
pub const MAX_COLLECTION_LEN: usize = 120;
/// Ids: kept well under MongoDB's index key size.
pub const MAX_ID_LEN: usize = 512;
pub const MAX_INDEX_NAME_LEN: usize = 64;
pub const MAX_FIELD_PATH_LEN: usize = 256;
/// MongoDB's BSON document limit; JSON of the same data is about as large.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

fn invalid(what: &'static str, reason: String) -> StoreError {
    StoreError::InvalidName { what, reason }
}

/// Letters, digits, `_`, `-`, `.`; starting with a letter, digit or `_`. Also keeps `:` free
/// for the embedded store's table names.
fn check_token(what: &'static str, name: &str, max: usize) -> Result<(), StoreError> {
    if name.is_empty() {
        return Err(invalid(what, format!("{what} name is empty")));
    }
    if name.len() > max {
        return Err(invalid(what, format!("`{name}` is longer than {max} bytes")));
    }
    let first_ok = name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let rest_ok = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !first_ok || !rest_ok {
        return Err(invalid(
            what,
            format!(
                "`{name}` may hold only letters, digits, `_`, `-` and `.`, and start with a letter, digit or `_`"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn check_collection(name: &str) -> Result<(), StoreError> {
    check_token("collection", name, MAX_COLLECTION_LEN)?;
    if name.starts_with("system.") {
        return Err(invalid("collection", format!("`{name}`: the `system.` prefix is reserved")));
    }
    Ok(())
}

pub(crate) fn check_index_name(name: &str) -> Result<(), StoreError> {
    check_token("index", name, MAX_INDEX_NAME_LEN)?;
    if name == "_id_" {
        return Err(invalid("index", "`_id_` is the id's own index".into()));
    }
    Ok(())
}

pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(invalid("id", "document id is empty".into()));
    }
    if id.len() > MAX_ID_LEN {
        return Err(invalid("id", format!("document id is longer than {MAX_ID_LEN} bytes")));
    }
    if id.contains('\0') {
        return Err(invalid("id", "document id contains a NUL byte".into()));
    }
    Ok(())
}

/// Dotted paths such as `owner.email`; segments non-empty, no `$` operators, not `_v`.
pub(crate) fn check_field_path(path: &str) -> Result<(), StoreError> {
    let bad = |reason: &str| invalid("field path", format!("`{path}`: {reason}"));
    if path.is_empty() || path.len() > MAX_FIELD_PATH_LEN {
        return Err(bad("must be 1 to 256 bytes"));
    }
    if path.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    if path.split('.').any(|s| s.is_empty() || s.starts_with('$')) {
        return Err(bad("segments must be non-empty and not start with `$`"));
    }
    if path == "_v" || path.starts_with("_v.") || path.starts_with("_id.") {
        return Err(bad("`_v` is the store's version field; use `_id` alone for the id"));
    }
    Ok(())
}

/// A document body: a JSON object without the store's `_id` / `_v`, without `$`-prefixed or
/// NUL-holding keys at any depth, with integers that fit MongoDB's int64.
pub(crate) fn check_document(doc: &Value) -> Result<(), StoreError> {
    let Value::Object(map) = doc else {
        return Err(StoreError::InvalidDocument("a document must be a JSON object".into()));
    };
    if let Some(key) = ["_id", "_v"].into_iter().find(|k| map.contains_key(*k)) {
        return Err(StoreError::InvalidDocument(format!(
            "`{key}` is reserved for the store (the id and version are passed separately)"
        )));
    }
    check_value(doc, "document")?;
    let size = serde_json::to_vec(doc).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > MAX_DOCUMENT_BYTES {
        return Err(StoreError::InvalidDocument(format!(
            "document is {size} bytes, over the {MAX_DOCUMENT_BYTES} byte limit"
        )));
    }
    Ok(())
}

/// Checks keys and numbers at every depth of a document or a filter value.
pub(crate) fn check_value(value: &Value, context: &str) -> Result<(), StoreError> {
    let err = |reason: String| match context {
        "document" => StoreError::InvalidDocument(reason),
        _ => StoreError::InvalidQuery(reason),
    };
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key.starts_with('$') || key.contains('\0') {
                    return Err(err(format!("key `{key}` starts with `$` or holds a NUL byte")));
                }
                check_value(inner, context)?;
            }
        }
        Value::Array(items) => items.iter().try_for_each(|v| check_value(v, context))?,
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => {
            return Err(err(format!("integer {n} does not fit a signed 64-bit integer")));
        }
        _ => {}
    }
    Ok(())
}
