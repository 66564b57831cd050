//! Input checks. Each error names the field and the rule, never the offending secret.

use ramen_service::rules;

use crate::error::AuthError;

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

/// An email address ([`rules::EMAIL`], the rule the API document states), lowercased. Not
/// trimmed: what the document refuses, the API refuses (the console's `type=email` fields and
/// the CLI trim before sending; sign-in trims for itself).
pub fn email(value: &str) -> Result<String, AuthError> {
    if !rules::EMAIL.accepts(value) {
        return Err(invalid(
            "email",
            format!("{} is not {}", ramen_service::validate::quoted(value), rules::EMAIL.what),
        ));
    }
    Ok(value.to_ascii_lowercase())
}

/// Secret names are environment-variable names (`GITHUB_TOKEN`): [`rules::SECRET_NAME`].
pub fn secret_name(value: &str) -> Result<(), AuthError> {
    if !rules::SECRET_NAME.accepts(value) {
        return Err(invalid(
            "name",
            format!("`{value}` is not {} (at most 128 characters)", rules::SECRET_NAME.what),
        ));
    }
    Ok(())
}

/// The value ([`rules::SECRET_VALUE`]) is checked without ever being quoted back.
pub fn secret_value(value: &str) -> Result<(), AuthError> {
    if value.is_empty() {
        return Err(invalid("value", "must not be empty"));
    }
    if !rules::SECRET_VALUE.accepts(value) {
        return Err(invalid(
            "value",
            format!("is longer than {} characters", rules::SECRET_VALUE.max_chars),
        ));
    }
    Ok(())
}

/// Display names (keys): [`rules::DISPLAY_NAME`].
pub fn display_name(field: &'static str, value: &str) -> Result<(), AuthError> {
    if !rules::DISPLAY_NAME.accepts(value) {
        return Err(invalid(field, format!("must be {}", rules::DISPLAY_NAME.what)));
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
        assert_eq!(email("Admin@Ramen.Local").unwrap(), "admin@ramen.local");
        for bad in ["", "no-at", "@x", "a@", "a b@c", "a@b@c", " a@b.c", "a@b.c\n"] {
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
