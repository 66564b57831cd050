//! Whether a `tools/call` result reports a tool error: its top-level `isError` is `true`.
//!
//! The node splices the runtime's result into its answer without parsing it, and most results
//! carry `"isError":false`, so parsing each one to read a flag would cost every call. The
//! bytes are searched first; only a result with some `"isError"` key set to `true` (the key
//! may be nested, say in `structuredContent`) is parsed to see whether that key is the
//! top-level one. A search for the key's bytes cannot be fooled by text inside a string: a
//! quote there is escaped (`\"isError\"`), so it never matches `"isError"`.
//!
//! The runtime writes keys as plain ASCII (`json.dumps` with `ensure_ascii=False`, pydantic's
//! `model_dump_json`); a top-level key spelt with escapes (`"is\u0045rror"`) is not seen.

use std::collections::HashMap;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::value::RawValue;

const KEY: &[u8] = br#""isError""#;

static FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(KEY));

/// True when `result`'s top-level `isError` is `true` (the MCP schema's tool error).
pub fn is_tool_error(result: &str) -> bool {
    let bytes = result.as_bytes();
    let set_true = FINDER.find_iter(bytes).any(|at| value_is_true(&bytes[at + KEY.len()..]));
    set_true && top_level_flag(result)
}

/// Whether the bytes after a key are `: true` (JSON whitespace allowed around the colon).
/// A match not followed by a colon was a string value (`["isError", true]`), not a key.
fn value_is_true(after_key: &[u8]) -> bool {
    let rest = skip_whitespace(after_key);
    match rest.split_first() {
        Some((b':', value)) => skip_whitespace(value).starts_with(b"true"),
        _ => false,
    }
}

fn skip_whitespace(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    &bytes[start.unwrap_or(bytes.len())..]
}

/// Parses the result's top-level members for the flag; their values are borrowed, not built.
/// Of duplicate keys the last counts, as in the JSON parsers of Python and JavaScript.
fn top_level_flag(result: &str) -> bool {
    serde_json::from_str::<HashMap<String, &RawValue>>(result)
        .ok()
        .and_then(|members| members.get("isError").map(|flag| flag.get() == "true"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_top_level_flag_set_to_true_is_a_tool_error() {
        assert!(is_tool_error(r#"{"content":[],"isError":true}"#));
        assert!(is_tool_error(r#"{"isError":true,"content":[]}"#));
        // Whitespace the JSON grammar allows around the colon.
        assert!(is_tool_error(r#"{"content": [], "isError" : true}"#));
        assert!(is_tool_error("{\"content\":[],\n  \"isError\":\n\ttrue\n}"));
    }

    #[test]
    fn a_flag_anywhere_but_the_top_level_is_not() {
        assert!(!is_tool_error(r#"{"content":[],"isError":false}"#));
        assert!(!is_tool_error(r#"{"content":[]}"#));
        // A tool's own structured output may use the name.
        assert!(!is_tool_error(
            r#"{"content":[],"structuredContent":{"isError":true},"isError":false}"#
        ));
        assert!(!is_tool_error(r#"{"content":[],"structuredContent":{"isError":true}}"#));
        // The name as text, and as a value in an array.
        assert!(!is_tool_error(r#"{"content":[{"type":"text","text":"\"isError\":true"}]}"#));
        assert!(!is_tool_error(r#"{"content":[],"structuredContent":["isError",true]}"#));
        // Not a boolean: not a tool error by the schema.
        assert!(!is_tool_error(r#"{"content":[],"isError":"true"}"#));
        // Of duplicate keys the last counts.
        assert!(!is_tool_error(r#"{"isError":true,"content":[],"isError":false}"#));
        assert!(is_tool_error(r#"{"isError":false,"content":[],"isError":true}"#));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    use super::*;

    fn json_value() -> impl Strategy<Value = Value> {
        crate::mcp::json_values::json_value(&["isError"], &["isError", "\"isError\":true"])
    }

    fn result() -> impl Strategy<Value = Map<String, Value>> {
        proptest::collection::btree_map(
            prop_oneof![
                Just("content".to_owned()),
                Just("structuredContent".to_owned()),
                Just("isError".to_owned()),
                any::<String>()
            ],
            json_value(),
            0..5,
        )
        .prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        /// Compact or pretty, the answer is the parsed result's top-level flag.
        #[test]
        fn agrees_with_the_parsed_result(result in result()) {
            let expected = result.get("isError") == Some(&Value::Bool(true));
            let compact = serde_json::to_string(&result).unwrap();
            prop_assert_eq!(is_tool_error(&compact), expected, "{}", compact);
            let pretty = serde_json::to_string_pretty(&result).unwrap();
            prop_assert_eq!(is_tool_error(&pretty), expected, "{}", pretty);
        }
    }
}
