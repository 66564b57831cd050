//! `Mcp-Param-{name}` headers (2026-07-28): a tool whose input schema marks a parameter with
//! `x-mcp-header` gets that argument mirrored into a header, so intermediaries can route on
//! it. The node processes the body, so it must check each such header against the
//! arguments: present exactly when the argument is, equal after Base64-sentinel decoding
//! (integers compared as numbers), and made of valid header characters.

use axum::http::HeaderMap;
use serde_json::Value;
use serde_json::value::RawValue;

use super::envelope::decode_header_value;
use crate::catalog::ParamHeader;

/// `Err(message)` when a header is missing, malformed or does not match its argument.
pub fn check(
    headers: &HeaderMap,
    specs: &[ParamHeader],
    arguments: Option<&RawValue>,
) -> Result<(), String> {
    if specs.is_empty() {
        return Ok(());
    }
    let arguments: Value =
        arguments.and_then(|a| serde_json::from_str(a.get()).ok()).unwrap_or(Value::Null);
    for spec in specs {
        let value =
            spec.path.iter().try_fold(&arguments, |v, key| v.get(key)).filter(|v| !v.is_null());
        let raw = match headers.get(spec.header.as_str()) {
            None => match value {
                None => continue,
                Some(_) => {
                    return Err(format!(
                        "the {} header is required: argument {} is present",
                        spec.header,
                        spec.path.join(".")
                    ));
                }
            },
            Some(raw) => raw,
        };
        let Ok(text) = raw.to_str() else {
            return Err(format!(
                "the {} header holds characters a header value may not",
                spec.header
            ));
        };
        let Some(decoded) = decode_header_value(text.trim()) else {
            return Err(format!("the {} header is not valid Base64: {text:?}", spec.header));
        };
        let Some(value) = value else { continue }; // nothing in the body to compare with
        if !matches(&decoded, value) {
            return Err(format!(
                "Header mismatch: {} header value {decoded:?} does not match body value {value}",
                spec.header
            ));
        }
    }
    Ok(())
}

fn matches(header: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (header.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h == b,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn spec(header: &str, path: &[&str], kind: &str) -> ParamHeader {
        ParamHeader {
            header: header.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
            kind: kind.into(),
        }
    }

    fn run(pairs: &[(&'static str, &str)], arguments: &str) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        let specs = [
            spec("mcp-param-region", &["region"], "string"),
            spec("mcp-param-zip", &["at", "zip"], "integer"),
        ];
        let arguments = RawValue::from_string(arguments.into()).unwrap();
        check(&headers, &specs, Some(&arguments))
    }

    #[test]
    fn headers_mirror_arguments() {
        assert!(run(&[("mcp-param-region", "us-west1")], r#"{"region":"us-west1"}"#).is_ok());
        assert!(run(&[], r#"{"region":"us-west1"}"#).is_err(), "missing while in the body");
        assert!(run(&[], r#"{"region":null}"#).is_ok(), "null means absent");
        assert!(run(&[("mcp-param-region", "eu")], r#"{"region":"us"}"#).is_err());
        assert!(
            run(&[("mcp-param-region", "=?base64?SGVsbG8=?=")], r#"{"region":"Hello"}"#).is_ok()
        );
        assert!(
            run(&[("mcp-param-region", "=?base64?SGVsbG8?=")], r#"{"region":"Hello"}"#).is_err()
        );
        assert!(
            run(&[("mcp-param-region", "SGVsbG8=")], r#"{"region":"SGVsbG8="}"#).is_ok(),
            "literal"
        );
        assert!(
            run(&[("mcp-param-zip", "42.0")], r#"{"at":{"zip":42}}"#).is_ok(),
            "numeric compare"
        );
        assert!(run(&[("mcp-param-zip", "43")], r#"{"at":{"zip":42}}"#).is_err());
    }
}
