//! Input rules for names and lists. Each failure names the field and what would be accepted.

use crate::error::{Error, Result};

/// A DNS label ([`ramen_service::validate::dns_label`]).
pub fn dns_label(field: &'static str, value: &str) -> Result<()> {
    ramen_service::validate::dns_label(value).map_err(|reason| Error::invalid(field, reason))
}

/// Blocked entries: a package (`weather`) or a tool (`weather.forecast`), Python identifiers
/// joined by dots. Deduplicated, order kept.
pub fn blocked(values: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for raw in values {
        // The API document's rule ([`ramen_service::rules::TOOL_NAME`]); not trimmed.
        let value = raw.as_str();
        let ok = ramen_service::rules::TOOL_NAME.accepts(value);
        if !ok {
            return Err(Error::invalid(
                "blocked",
                format!("{raw:?} is not a package (`weather`) or tool (`weather.forecast`) name"),
            ));
        }
        if !out.iter().any(|o| o == value) {
            out.push(value.to_owned());
        }
    }
    Ok(out)
}

/// Zone names, deduplicated, each a DNS label.
pub fn zones(values: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for zone in values {
        dns_label("zones", zone)?;
        if !out.contains(zone) {
            out.push(zone.clone());
        }
    }
    Ok(out)
}

/// Idempotency keys: [`ramen_service::rules::IDEMPOTENCY_KEY`].
pub fn idempotency_key(key: &str) -> Result<()> {
    if !ramen_service::rules::IDEMPOTENCY_KEY.accepts(key) {
        return Err(Error::invalid(
            "idempotency_key",
            "must be at most 128 printable ASCII characters without spaces",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lists() {
        assert!(dns_label("name", "team-a").is_ok());
        for bad in ["", "Team", "1team", "team-", "te_am", &"a".repeat(64)] {
            assert!(dns_label("name", bad).is_err(), "{bad}");
        }
        let list = blocked(&["weather".into(), "notes.add".into(), "weather".into()]).unwrap();
        assert_eq!(list, vec!["weather", "notes.add"]);
        // As the API document states it: not trimmed.
        assert!(blocked(&[" notes.add ".into()]).is_err());
        assert!(blocked(&["bad name".into()]).unwrap_err().to_string().contains("bad name"));
        assert!(blocked(&["a..b".into()]).is_err());
        assert!(idempotency_key("retry-1").is_ok());
        assert!(idempotency_key("has space").is_err());
    }
}
