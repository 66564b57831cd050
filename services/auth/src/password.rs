//! Password hashing with argon2id (the `argon2` crate's defaults: 19 MiB, 2 passes, 1 lane,
//! OWASP's recommendation), stored as a PHC string so the parameters travel with each hash and
//! can be raised later without invalidating old ones. Hashing is CPU-bound: callers run it on
//! the blocking pool.

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::Rng;

pub const MIN_LENGTH: usize = 12;
/// Bounds the work an unauthenticated caller can ask for: a sign-in's password is hashed only
/// under this (a new one is at most 256 characters, at most 1024 bytes).
pub const MAX_BYTES: usize = 1024;

/// A PHC string of a password nobody knows, verified against when the email is unknown so a
/// login takes as long for a missing user as for a wrong password.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash(&generate_one_time()))
}

/// Why a new password is refused (the message names the rule, never the password): the
/// API document's rule, [`ramen_service::rules::PASSWORD`].
pub fn check_new(password: &str) -> Result<(), String> {
    let rule = &ramen_service::rules::PASSWORD;
    let chars = password.chars().count();
    if chars < rule.min_chars {
        return Err(format!("must be at least {} characters", rule.min_chars));
    }
    if chars > rule.max_chars {
        return Err(format!("must be at most {} characters", rule.max_chars));
    }
    if !rule.accepts(password) {
        return Err("must not be only spaces".into());
    }
    Ok(())
}

pub fn hash(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    // Fails only for parameters or salts outside argon2's limits, which the defaults are not.
    Argon2::default().hash_password(password.as_bytes(), &salt).expect("argon2id hash").to_string()
}

/// Constant-time check of `password` against a stored PHC string; false for a corrupt hash.
pub fn verify(password: &str, phc: &str) -> bool {
    if password.len() > MAX_BYTES {
        return false;
    }
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// A one-time password: 20 characters from an alphabet without look-alikes (~115 bits).
pub fn generate_one_time() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rngs::OsRng;
    (0..20).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_argon2id_salted_and_verify() {
        let first = hash("correct horse battery");
        let second = hash("correct horse battery");
        assert!(first.starts_with("$argon2id$"), "{first}");
        assert_ne!(first, second, "salted");
        assert!(verify("correct horse battery", &first));
        assert!(!verify("correct horse batterY", &first));
        assert!(!verify("anything", "not a phc string"));
        assert!(!verify("x", dummy_hash()));
    }

    #[test]
    fn new_passwords_are_checked() {
        assert!(check_new("short").unwrap_err().contains("12"));
        assert!(check_new(&"x".repeat(2000)).is_err());
        assert!(check_new("            ").is_err());
        assert!(check_new("a good long passphrase").is_ok());
        let otp = generate_one_time();
        assert_eq!(otp.len(), 20);
        assert!(check_new(&otp).is_ok());
    }
}
