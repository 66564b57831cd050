//! Tickets: what verifies, and every way one is refused (another key, another audience, a
//! tampered payload, past its lifetime).

use std::collections::BTreeMap;

use super::*;
use crate::Role;
use crate::audience::{NODE_TTL, SERVICE_TTL};

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

fn caller() -> Caller {
    let grants = Grants {
        super_admin: false,
        must_change_password: false,
        groups: BTreeMap::from([("team-a".to_owned(), Role::Admin)]),
    };
    Caller::user("u-1", "req-9", grants)
}

#[test]
fn a_signed_caller_verifies_as_itself() {
    let keys = TicketKeys::new(SECRET, None);
    let ticket = keys.sign(&caller(), "auth", 1_000);
    assert_eq!(keys.verify(&ticket, "auth", 2_000), Ok(caller()));
    assert_eq!(keys.audience("auth").verify_header(Some(&ticket), 2_000), Ok(caller()));
    assert_eq!(keys.audience("auth").verify_header(None, 2_000), Err(TicketError::Missing));
}

#[test]
fn another_key_a_tampered_payload_or_an_old_ticket_is_refused() {
    let keys = TicketKeys::new(SECRET, None);
    let other = TicketKeys::new(b"another-secret-another-secret-xx", None);
    let ticket = keys.sign(&caller(), "auth", 1_000);
    assert_eq!(other.verify(&ticket, "auth", 1_000), Err(TicketError::BadSignature));

    let mut forged = caller();
    forged.grants.super_admin = true;
    let forged_ticket = other.sign(&forged, "auth", 1_000);
    let payload = forged_ticket.split('.').nth(1).unwrap();
    let signature = ticket.rsplit('.').next().unwrap();
    let spliced = format!("v1.{payload}.{signature}");
    assert_eq!(keys.verify(&spliced, "auth", 1_000), Err(TicketError::BadSignature));

    let late = 1_000 + SERVICE_TTL.as_millis() as i64 + 5;
    assert_eq!(keys.verify(&ticket, "auth", late), Err(TicketError::Expired(5)));
    assert!(matches!(keys.verify("v1.abc", "auth", 0), Err(TicketError::Malformed(_))));
    assert!(matches!(keys.verify("v2.a.b", "auth", 0), Err(TicketError::Malformed(_))));
}

#[test]
fn a_ticket_for_another_service_is_refused_naming_both() {
    let keys = TicketKeys::new(SECRET, None);
    let for_deployer = keys.sign(&caller(), "deployer", 0);
    let refused = keys.verify(&for_deployer, "auth", 0).unwrap_err();
    assert_eq!(
        refused,
        TicketError::WrongAudience { meant_for: "deployer".into(), expected: "auth".into() }
    );
    assert_eq!(refused.to_string(), r#"the caller ticket is meant for "deployer", not "auth""#);
    // Rewriting the audience in the payload breaks the signature, which is still refused.
    let payload = for_deployer.split('.').nth(1).unwrap();
    let json = String::from_utf8(B64URL.decode(payload).unwrap()).unwrap();
    let relabelled = B64URL.encode(json.replace(r#""u":"deployer""#, r#""u":"auth""#));
    let signature = for_deployer.rsplit('.').next().unwrap();
    let spliced = format!("v1.{relabelled}.{signature}");
    assert_eq!(keys.verify(&spliced, "auth", 0), Err(TicketError::BadSignature));
}

#[test]
fn node_tickets_live_a_minute_service_tickets_five() {
    let keys = TicketKeys::new(SECRET, None);
    let node = crate::audience::runner("a", "z1");
    let ticket = keys.sign(&caller(), &node, 0);
    let last = NODE_TTL.as_millis() as i64;
    assert_eq!(NODE_TTL.as_secs(), 60);
    assert_eq!(keys.verify(&ticket, &node, last), Ok(caller()));
    assert_eq!(keys.verify(&ticket, &node, last + 1), Err(TicketError::Expired(1)));
    let service = keys.sign(&caller(), "deployer", 0);
    assert_eq!(keys.verify(&service, "deployer", last + 1), Ok(caller()));
    assert_eq!(SERVICE_TTL.as_secs(), 300);
}

#[test]
fn the_previous_secret_still_verifies_during_a_rotation() {
    let old = TicketKeys::new(b"old-secret-old-secret-old-secret", None);
    let rotated = TicketKeys::new(
        b"new-secret-new-secret-new-secret",
        Some(b"old-secret-old-secret-old-secret"),
    );
    let ticket = old.sign(&caller(), "zone-manager", 0);
    assert_eq!(rotated.verify(&ticket, "zone-manager", 0), Ok(caller()));
    // A node given its placement's keys during the rotation takes tickets under either.
    let node = crate::audience::runner("a", "z1");
    let node_keys = rotated.audience(&node);
    assert_eq!(node_keys.keys().count(), 2);
    assert_eq!(node_keys.verify(&old.sign(&caller(), &node, 0), 0), Ok(caller()));
    assert_eq!(node_keys.verify(&rotated.sign(&caller(), &node, 0), 0), Ok(caller()));
}

#[test]
fn a_placement_key_is_good_for_that_placement_only() {
    let master = TicketKeys::new(SECRET, None);
    let a = crate::audience::runner("a", "z1");
    let b = crate::audience::runner("b", "z1");
    let node_a = master.audience(&a);
    // It cannot verify tickets for another placement or a service...
    let for_b = master.sign(&caller(), &b, 0);
    assert!(matches!(node_a.verify(&for_b, 0), Err(TicketError::WrongAudience { .. })));
    let for_auth = master.sign(&caller(), "auth", 0);
    assert!(matches!(node_a.verify(&for_auth, 0), Err(TicketError::WrongAudience { .. })));
    // ...and what it signs is good at its own placement's nodes and nowhere else.
    let minted = node_a.sign(&caller(), 0);
    assert_eq!(master.verify(&minted, &a, 0), Ok(caller()));
    for elsewhere in [b.as_str(), "auth", "deployer", "zone-manager"] {
        assert!(
            matches!(master.verify(&minted, elsewhere, 0), Err(TicketError::WrongAudience { .. })),
            "{elsewhere}"
        );
    }
    // Claiming another audience with it: the payload says `b`, the signature is `a`'s.
    let [current] = node_a.keys().copied().collect::<Vec<_>>()[..] else { panic!() };
    let pretender = AudienceKeys::from_keys(&b, current, None);
    let forged = pretender.sign(&caller(), 0);
    assert_eq!(master.verify(&forged, &b, 0), Err(TicketError::BadSignature));
    assert_eq!(
        master.verify(&forged, "auth", 0).unwrap_err().to_string(),
        format!("the caller ticket is meant for {b:?}, not \"auth\"")
    );
}

#[test]
fn a_ticket_without_an_audience_says_so() {
    let keys = TicketKeys::new(SECRET, None);
    let json = r#"{"a":"deployer","g":{},"e":99999999999999}"#;
    let ticket = format!("v1.{}.{}", B64URL.encode(json), B64URL.encode([0u8; 32]));
    assert_eq!(keys.verify(&ticket, "auth", 0), Err(TicketError::NoAudience));
}
