//! Input rules every service applies the same way, so a name one service accepts is never
//! refused by the next. Each returns the reason (what is wrong and what would be accepted);
//! the caller names the field in its own error type.

/// [`dns_label`] as a regular expression (ECMA-262, for JSON Schema `pattern`), and its
/// length bound: the OpenAPI document states the rule with these, and the property test below
/// generates accepted values from the same pattern, so the document and the check agree.
pub const DNS_LABEL_PATTERN: &str = "^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$";
pub const DNS_LABEL_MAX_LEN: usize = 63;
/// [`dns_label`] as a [`ramen_rules::TextRule`], for the document's generator; a property test
/// holds the two to the same answers.
pub static DNS_LABEL_RULE: ramen_rules::TextRule =
    ramen_rules::TextRule::new("a DNS label", DNS_LABEL_PATTERN, 1, DNS_LABEL_MAX_LEN);

/// Groups, environments and zones are DNS labels: they name Kubernetes namespaces
/// (`ramen-<group>-<zone>`) and hostnames. 1–63 lowercase letters, digits and `-`, starting
/// with a letter (so a name is never mistaken for a number) and not ending with `-`.
pub fn dns_label(value: &str) -> Result<(), String> {
    let bad = |reason: &str| Err(format!("{} {reason}", quoted(value)));
    if value.is_empty() {
        return Err("is required".to_owned());
    }
    if value.len() > DNS_LABEL_MAX_LEN {
        return bad("is longer than 63 characters (a DNS label)");
    }
    if !value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return bad("may only contain lowercase letters, digits and `-` (a DNS label)");
    }
    if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("must start with a lowercase letter");
    }
    if value.ends_with('-') {
        return bad("must not end with `-`");
    }
    Ok(())
}

/// A path on this origin to go to after signing in, else `/`: never another origin (`//host`,
/// `/\host`, an absolute URL). The console's sign-in and single sign-on's `next` both use it.
pub fn same_origin_path(next: &str) -> String {
    let safe = next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\");
    if safe { next.to_owned() } else { "/".into() }
}

/// How a refused value is shown in its error: quoted with control characters escaped (no line
/// of a log can be forged through it) and cut after [`SHOWN_CHARS`] characters (a megabyte of
/// input does not become a megabyte of error).
pub fn quoted(value: &str) -> String {
    let mut chars = value.chars();
    let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
    match chars.next() {
        None => format!("{head:?}"),
        Some(_) => format!("{head:?}… ({} bytes)", value.len()),
    }
}

/// The longest part of a refused value an error repeats.
pub const SHOWN_CHARS: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any input: no panic; accepted exactly when it is a DNS label; a refusal is short,
        /// one line, and says what is wrong.
        #[test]
        fn any_string_is_judged_as_a_dns_label(value in any::<String>()) {
            let label = !value.is_empty()
                && value.len() <= 63
                && value.starts_with(|c: char| c.is_ascii_lowercase())
                && !value.ends_with('-')
                && value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            match dns_label(&value) {
                Ok(()) => prop_assert!(label, "{value:?} accepted"),
                Err(reason) => {
                    prop_assert!(!label, "{value:?} refused: {reason}");
                    prop_assert!(!reason.contains('\n') && reason.len() < 4 * SHOWN_CHARS + 100, "{reason}");
                }
            }
        }

        /// The DNS-label rule as a pattern agrees with the check that names what is wrong.
        #[test]
        fn dns_label_rule_is_the_check(value in "[a-z0-9A-Z_-]{0,70}") {
            prop_assert_eq!(DNS_LABEL_RULE.accepts(&value), dns_label(&value).is_ok());
        }

        #[test]
        fn labels_are_accepted(value in DNS_LABEL_PATTERN.trim_start_matches('^').trim_end_matches('$')) {
            prop_assert_eq!(dns_label(&value), Ok(()));
        }
    }

    #[test]
    fn a_long_refused_value_is_cut_and_escaped() {
        let shown = quoted(&format!("line\nforged {}", "x".repeat(10_000)));
        assert!(shown.starts_with("\"line\\nforged "), "{shown}");
        assert!(shown.ends_with("… (10012 bytes)") && shown.len() < 120, "{shown}");
    }

    #[test]
    fn dns_labels() {
        for good in ["a", "team-a1", &"x".repeat(63)] {
            assert_eq!(dns_label(good), Ok(()), "{good}");
        }
        assert_eq!(dns_label(""), Err("is required".to_owned()));
        for (bad, says) in [
            ("Team", "lowercase letters"),
            ("a_b", "lowercase letters"),
            ("-a", "start with a lowercase letter"),
            ("1a", "start with a lowercase letter"),
            ("a-", "not end with"),
            (&"a".repeat(64), "longer than 63"),
        ] {
            let reason = dns_label(bad).unwrap_err();
            assert!(
                reason.contains(says) && reason.contains(&format!("{bad:?}")),
                "{bad}: {reason}"
            );
        }
    }
}
