use std::time::Duration;

use super::*;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef-current";
const OLD: &[u8] = b"0123456789abcdef0123456789abcdef-previous";
const OTHER: &[u8] = b"0123456789abcdef0123456789abcdef-attacker";
const NOW: i64 = 1_800_000_000;

fn claims() -> AccessClaims {
    AccessClaims {
        sub: "u1".into(),
        email: "a@example.com".into(),
        sa: false,
        mcp: false,
        iat: 0,
        exp: 0,
        sid: "s1".into(),
        kid: String::new(),
    }
}

fn keys() -> TokenKeys {
    TokenKeys::new(KEY, None, Duration::from_secs(900))
}

fn forge(header: &str, payload: &AccessClaims, key: &[u8]) -> String {
    let input = format!("{}.{}", B64URL.encode(header), encode_json(payload));
    let mut mac = HmacSha256::new_from_slice(key).unwrap();
    mac.update(input.as_bytes());
    format!("{input}.{}", B64URL.encode(mac.finalize().into_bytes()))
}

#[test]
fn issued_tokens_verify_and_carry_the_claims() {
    let keys = keys();
    let (token, issued) = keys.issue(AccessClaims { sa: true, ..claims() }, NOW);
    assert_eq!(issued.exp, NOW + 900);
    let verified = keys.verify(&token, NOW + 1).unwrap();
    assert_eq!(verified, issued);
    assert!(verified.sa && verified.kid == keys.current_key_id());
}

#[test]
fn expired_tokens_are_rejected() {
    let keys = keys();
    let (token, _) = keys.issue(claims(), NOW);
    assert_eq!(keys.verify(&token, NOW + 900), Err(TokenError::Expired));
    assert_eq!(keys.verify(&token, NOW + 10_000), Err(TokenError::Expired));
}

#[test]
fn tampered_payloads_and_signatures_are_rejected() {
    let keys = keys();
    let (token, _) = keys.issue(claims(), NOW);
    let parts: Vec<&str> = token.split('.').collect();
    let promoted = encode_json(&AccessClaims { sa: true, exp: NOW + 900, ..claims() });
    let tampered = format!("{}.{promoted}.{}", parts[0], parts[2]);
    assert_eq!(keys.verify(&tampered, NOW), Err(TokenError::Signature));
    let mut signature = B64URL.decode(parts[2]).unwrap();
    signature[0] ^= 1;
    let flipped = format!("{}.{}.{}", parts[0], parts[1], B64URL.encode(signature));
    assert_eq!(keys.verify(&flipped, NOW), Err(TokenError::Signature));
    assert!(matches!(keys.verify("a.b", NOW), Err(TokenError::Malformed(_))));
    assert!(matches!(keys.verify(&format!("{token}.x"), NOW), Err(TokenError::Malformed(_))));
}

#[test]
fn alg_none_and_other_algorithms_are_rejected() {
    let keys = keys();
    let kid = keys.current_key_id().to_owned();
    let payload = AccessClaims { exp: NOW + 900, ..claims() };
    let none = format!(
        "{}.{}.",
        B64URL.encode(format!(r#"{{"alg":"none","typ":"JWT","kid":"{kid}"}}"#)),
        encode_json(&payload)
    );
    assert_eq!(keys.verify(&none, NOW), Err(TokenError::Algorithm("none".into())));
    let hs512 = forge(&format!(r#"{{"alg":"HS512","kid":"{kid}"}}"#), &payload, KEY);
    assert_eq!(keys.verify(&hs512, NOW), Err(TokenError::Algorithm("HS512".into())));
    let lowercase = forge(&format!(r#"{{"alg":"hs256","kid":"{kid}"}}"#), &payload, KEY);
    assert!(matches!(keys.verify(&lowercase, NOW), Err(TokenError::Algorithm(_))));
}

#[test]
fn tokens_from_another_key_are_rejected_even_with_our_key_id() {
    let keys = keys();
    let attacker = TokenKeys::new(OTHER, None, Duration::from_secs(900));
    let (token, _) = attacker.issue(claims(), NOW);
    assert_eq!(keys.verify(&token, NOW), Err(TokenError::UnknownKey));
    let kid = keys.current_key_id().to_owned();
    let payload = AccessClaims { exp: NOW + 900, ..claims() };
    let spoofed = forge(&format!(r#"{{"alg":"HS256","kid":"{kid}"}}"#), &payload, OTHER);
    assert_eq!(keys.verify(&spoofed, NOW), Err(TokenError::Signature));
    let no_kid = forge(r#"{"alg":"HS256"}"#, &payload, KEY);
    assert_eq!(keys.verify(&no_kid, NOW), Err(TokenError::UnknownKey));
}

#[test]
fn rotation_keeps_tokens_of_the_previous_key_valid() {
    let before = TokenKeys::new(OLD, None, Duration::from_secs(900));
    let (old_token, _) = before.issue(claims(), NOW);
    let rotated = TokenKeys::new(KEY, Some(OLD), Duration::from_secs(900));
    assert_eq!(rotated.verify(&old_token, NOW).unwrap().kid, before.current_key_id());
    let (new_token, _) = rotated.issue(claims(), NOW);
    assert_eq!(rotated.verify(&new_token, NOW).unwrap().kid, rotated.current_key_id());
    // Once the previous key is dropped, its tokens stop working.
    assert_eq!(keys().verify(&old_token, NOW), Err(TokenError::UnknownKey));
    // A process that has not rotated yet does not accept the new key's tokens.
    assert_eq!(before.verify(&new_token, NOW), Err(TokenError::UnknownKey));
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any text: refused, without a panic, with a short message.
        #[test]
        fn any_text_is_refused(token in any::<String>()) {
            let err = keys().verify(&token, NOW).unwrap_err();
            prop_assert!(err.to_string().len() < 250, "{err}");
        }

        /// Three dot-separated parts of anything, including valid base64 JSON headers with
        /// hostile algorithms: refused.
        #[test]
        fn any_shaped_token_is_refused(alg in any::<String>(), payload in any::<String>(), sig in "[A-Za-z0-9_-]{0,64}") {
            let header = serde_json::json!({"alg": alg, "typ": "JWT", "kid": keys().current_key_id()}).to_string();
            let token = format!("{}.{}.{sig}", B64URL.encode(header), B64URL.encode(payload));
            let err = keys().verify(&token, NOW).unwrap_err();
            prop_assert!(err.to_string().len() < 250, "{err}");
        }

        /// A signed token verifies; changing any one character of it makes it refused.
        #[test]
        fn one_changed_character_is_refused(sub in "[a-z0-9]{1,16}", at in any::<usize>(), with in "[A-Za-z0-9_.-]") {
            let (token, _) = keys().issue(AccessClaims { sub: sub.clone(), ..claims() }, NOW);
            prop_assert_eq!(keys().verify(&token, NOW).unwrap().sub, sub);
            let i = at % token.len();
            prop_assume!(token[i..i + 1] != with);
            let changed = format!("{}{with}{}", &token[..i], &token[i + 1..]);
            prop_assert!(keys().verify(&changed, NOW).is_err(), "{changed}");
        }
    }
}
