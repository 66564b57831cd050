//! Input rules every service applies the same way, so a name one service accepts is never
//! refused by the next. Each returns the reason (what is wrong and what would be accepted);
//! the caller names the field in its own error type.

/// Groups, environments and zones are DNS labels: they name Kubernetes namespaces
/// (`ramen-<group>-<zone>`) and hostnames. 1–63 lowercase letters, digits and `-`, starting
/// with a letter (so a name is never mistaken for a number) and not ending with `-`.
pub fn dns_label(value: &str) -> Result<(), String> {
    let bad = |reason: &str| Err(format!("{value:?} {reason}"));
    if value.is_empty() {
        return Err("is required".to_owned());
    }
    if value.len() > 63 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
