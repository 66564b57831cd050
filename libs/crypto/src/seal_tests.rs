use super::*;

const A: [u8; 32] = [7; 32];
const B: [u8; 32] = [9; 32];

fn value() -> SecretValue {
    SecretValue::new("ghp_very-secret-token")
}

#[test]
fn round_trip_with_a_fresh_nonce_each_time() {
    let sealer = Sealer::new(&A, None);
    let first = sealer.seal("g/*/*/TOKEN", &value());
    let second = sealer.seal("g/*/*/TOKEN", &value());
    assert_ne!(first.nonce, second.nonce);
    assert_ne!(first.ciphertext, second.ciphertext);
    assert!(!first.ciphertext.contains("very-secret"));
    assert_eq!(sealer.unseal("g/*/*/TOKEN", &first).unwrap(), value());
    assert_eq!(first.key_id, sealer.current_key_id());
}

#[test]
fn wrong_key_tampering_and_another_record_fail_closed() {
    let sealed = Sealer::new(&A, None).seal("g/*/*/TOKEN", &value());
    // Another key that claims the same id cannot open it.
    let imposter = Sealer {
        current: SealKey { id: sealed.key_id.clone(), ..SealKey::new(&B) },
        previous: None,
    };
    assert_eq!(imposter.unseal("g/*/*/TOKEN", &sealed), Err(SealError::Corrupt));
    // A key with another id says so, without trying.
    let other = Sealer::new(&B, None);
    assert!(matches!(other.unseal("g/*/*/TOKEN", &sealed), Err(SealError::UnknownKey { .. })));
    let sealer = Sealer::new(&A, None);
    assert_eq!(
        sealer.unseal("h/*/*/TOKEN", &sealed),
        Err(SealError::Corrupt),
        "bound to its record"
    );
    let mut bytes = B64.decode(&sealed.ciphertext).unwrap();
    bytes[0] ^= 0x80;
    let tampered = Sealed { ciphertext: B64.encode(bytes), ..sealed.clone() };
    assert_eq!(sealer.unseal("g/*/*/TOKEN", &tampered), Err(SealError::Corrupt));
    let garbage = Sealed { nonce: "!!".into(), ..sealed };
    assert_eq!(sealer.unseal("g/*/*/TOKEN", &garbage), Err(SealError::Corrupt));
}

#[test]
fn rotation_opens_old_values_and_reseal_moves_them_to_the_new_key() {
    let old = Sealer::new(&A, None).seal("id", &value());
    let rotated = Sealer::new(&B, Some(&A));
    assert!(rotated.is_stale(&old));
    assert_eq!(rotated.unseal("id", &old).unwrap(), value());
    let resealed = rotated.reseal("id", &old).unwrap();
    assert!(!rotated.is_stale(&resealed));
    assert_eq!(resealed.key_id, rotated.current_key_id());
    // After the previous key is dropped, resealed values still open; old ones do not.
    let new_only = Sealer::new(&B, None);
    assert_eq!(new_only.unseal("id", &resealed).unwrap(), value());
    assert!(matches!(new_only.unseal("id", &old), Err(SealError::UnknownKey { .. })));
}

#[test]
fn values_never_show_in_debug_output() {
    let shown = format!("{:?}", value());
    assert!(!shown.contains("very-secret"), "{shown}");
}

#[test]
fn knows_the_current_and_the_previous_key_only() {
    let rotated = Sealer::new(&B, Some(&A));
    assert!(rotated.knows_key(Sealer::new(&A, None).current_key_id()));
    assert!(rotated.knows_key(rotated.current_key_id()));
    assert!(!Sealer::new(&B, None).knows_key(Sealer::new(&A, None).current_key_id()));
}
