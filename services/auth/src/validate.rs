//! Input checks. Each error names the field and the rule, never the offending secret.

use crate::error::AuthError;

pub const MAX_SECRET_BYTES: usize = 64 * 1024;

fn invalid(field: &'static str, reason: impl Into<String>) -> AuthError {
    AuthError::Invalid { field, reason: reason.into() }
}

/// Groups, environments and zones are DNS labels ([`ramen_service::validate::dns_label`]).
pub fn dns_label(field: &'static str, value: &str) -> Result<(), AuthError> {
    ramen_service::validate::dns_label(value).map_err(|reason| invalid(field, reason))
}

pub fn group(value: &str) -> Result<(), AuthError> {
    dns_label("group", value)
}

/// Optional scope fields: empty, or a DNS label.
pub fn scope(field: &'static str, value: &str) -> Result<(), AuthError> {
    if value.is_empty() { Ok(()) } else { dns_label(field, value) }
}

/// Lowercased, trimmed email; refuses what cannot be an address.
pub fn email(value: &str) -> Result<String, AuthError> {
    let email = value.trim().to_ascii_lowercase();
    let valid = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && matches!(email.split_once('@'), Some((local, domain)) if !local.is_empty() && !domain.is_empty() && !domain.contains('@'));
    if !valid {
        return Err(invalid("email", format!("`{}` is not an email address", value.trim())));
    }
    Ok(email)
}

/// Secret names are environment-variable names (`GITHUB_TOKEN`).
pub fn secret_name(value: &str) -> Result<(), AuthError> {
    let mut chars = value.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || value.len() > 128 || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(invalid(
            "name",
            format!("`{value}` is not an environment-variable name ([A-Za-z_][A-Za-z0-9_]*)"),
        ));
    }
    Ok(())
}

/// The value is checked without ever being quoted back.
pub fn secret_value(value: &str) -> Result<(), AuthError> {
    if value.is_empty() {
        return Err(invalid("value", "must not be empty"));
    }
    if value.len() > MAX_SECRET_BYTES {
        return Err(invalid("value", format!("is larger than {MAX_SECRET_BYTES} bytes")));
    }
    Ok(())
}

/// Display names (keys): 1-64 printable characters.
pub fn display_name(field: &'static str, value: &str) -> Result<(), AuthError> {
    if value.trim().is_empty() || value.chars().count() > 64 || value.chars().any(char::is_control)
    {
        return Err(invalid(field, "must be 1-64 printable characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_emails_and_names() {
        assert!(group("team-a1").is_ok());
        for bad in ["", "Team", "-a", "a-", "a_b", &"a".repeat(64)] {
            let err = group(bad).unwrap_err().to_string();
            assert!(err.starts_with("group:"), "{err}");
        }
        assert_eq!(email(" Admin@Ramen.Local ").unwrap(), "admin@ramen.local");
        for bad in ["", "no-at", "@x", "a@", "a b@c", "a@b@c"] {
            assert!(email(bad).is_err(), "{bad}");
        }
        assert!(secret_name("GITHUB_TOKEN").is_ok() && secret_name("_x1").is_ok());
        for bad in ["", "1A", "A-B", "A B"] {
            assert!(secret_name(bad).is_err(), "{bad}");
        }
        assert!(scope("environment", "").is_ok() && scope("zone", "Bad").is_err());
    }

    #[test]
    fn secret_value_errors_never_quote_the_value() {
        let huge = "s3cr3t".repeat(20_000);
        let err = secret_value(&huge).unwrap_err().to_string();
        assert!(!err.contains("s3cr3t"), "{err}");
        assert!(secret_value("").is_err() && secret_value("v").is_ok());
    }
}
