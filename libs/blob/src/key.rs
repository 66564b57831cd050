//! Key rules shared by every adapter, so a key that works on the local directory works on S3
//! and back (`ramen migrate to-cloud` copies one into the other), and so the local adapter can
//! map a key onto a path without ever leaving its root.

use crate::BlobError;

/// S3's own limit on a key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Most filesystems' `NAME_MAX`; a longer segment could be stored on S3 but not locally.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Segments starting with this are the local adapter's in-flight temp files.
pub(crate) const TEMP_MARKER: &str = ".ramen-tmp.";

/// Checks an object key: non-empty, relative, `/`-separated segments that are neither empty,
/// `.` nor `..`, without NUL, backslash or control characters, within the length caps.
pub fn validate_key(key: &str) -> Result<(), BlobError> {
    let invalid = |reason| Err(BlobError::InvalidKey { key: key.to_owned(), reason });
    if key.is_empty() {
        return invalid("key is empty");
    }
    check_common(key)?;
    if key.ends_with('/') {
        return invalid("key ends with '/' (that names a prefix, not an object)");
    }
    key.split('/').try_for_each(|segment| check_segment(key, segment))
}

/// Checks a listing/deletion prefix: the same rules as a key, except that it may be empty
/// (everything) and may end with `/`.
pub fn validate_prefix(prefix: &str) -> Result<(), BlobError> {
    if prefix.is_empty() {
        return Ok(());
    }
    check_common(prefix)?;
    let body = prefix.strip_suffix('/').unwrap_or(prefix);
    // A trailing partial segment such as `groups/a` (matching `groups/ab/...`) is allowed, but
    // it still may not be `.` or `..`.
    body.split('/').try_for_each(|segment| check_segment(prefix, segment))
}

fn check_common(key: &str) -> Result<(), BlobError> {
    let invalid = |reason| Err(BlobError::InvalidKey { key: key.to_owned(), reason });
    if key.len() > MAX_KEY_BYTES {
        return invalid("key is longer than 1024 bytes");
    }
    if key.starts_with('/') {
        return invalid("key starts with '/' (keys are relative)");
    }
    if key.contains('\0') {
        return invalid("key contains a NUL byte");
    }
    if key.contains('\\') {
        return invalid("key contains a backslash");
    }
    if key.chars().any(char::is_control) {
        return invalid("key contains a control character");
    }
    Ok(())
}

fn check_segment(key: &str, segment: &str) -> Result<(), BlobError> {
    let reason = match segment {
        "" => "key has an empty segment ('//')",
        "." => "key has a '.' segment",
        ".." => "key has a '..' segment",
        s if s.len() > MAX_SEGMENT_BYTES => "key has a segment longer than 255 bytes",
        s if s.starts_with(TEMP_MARKER) => "key segment starts with the reserved '.ramen-tmp.'",
        _ => return Ok(()),
    };
    Err(BlobError::InvalidKey { key: key.to_owned(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<(), BlobError>) -> &'static str {
        match result {
            Err(BlobError::InvalidKey { reason, .. }) => reason,
            other => panic!("expected InvalidKey, got {other:?}"),
        }
    }

    #[test]
    fn accepts_ordinary_keys() {
        for key in ["a", "groups/g1/abc123/pkg/__init__.py", "groups/g/.gitignore", "a..b/c.d"] {
            validate_key(key).unwrap();
        }
    }

    #[test]
    fn rejects_each_bad_shape_with_its_reason() {
        assert!(reason(validate_key("")).contains("empty"));
        assert!(reason(validate_key("/abs")).contains("starts with '/'"));
        assert!(reason(validate_key("a/../b")).contains("'..'"));
        assert!(reason(validate_key("a/./b")).contains("'.'"));
        assert!(reason(validate_key("a//b")).contains("empty segment"));
        assert!(reason(validate_key("a/b/")).contains("ends with '/'"));
        assert!(reason(validate_key("a\\b")).contains("backslash"));
        assert!(reason(validate_key("a\0b")).contains("NUL"));
        assert!(reason(validate_key("a\nb")).contains("control"));
        assert!(reason(validate_key(&"x".repeat(1025))).contains("1024"));
        assert!(reason(validate_key(&format!("a/{}", "x".repeat(256)))).contains("255"));
        assert!(reason(validate_key("a/.ramen-tmp.1")).contains("reserved"));
    }

    #[test]
    fn prefixes_may_be_empty_or_end_with_slash_but_not_escape() {
        for prefix in ["", "groups/", "groups/a", "groups/a/"] {
            validate_prefix(prefix).unwrap();
        }
        assert!(reason(validate_prefix("/")).contains("starts with '/'"));
        assert!(reason(validate_prefix("../")).contains("'..'"));
        assert!(reason(validate_prefix("groups//")).contains("empty segment"));
    }
}
