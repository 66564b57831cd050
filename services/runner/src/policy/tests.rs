use super::*;
use ramen_node_contract::key_hash as hash_key;

fn policy(config: PolicyConfig) -> Policy {
    Policy::compile(config).unwrap()
}

#[test]
fn keys_are_checked_against_hashes() {
    let p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![hash_key("rk_good")],
        ..Default::default()
    });
    assert!(p.key_ok(Some("Bearer rk_good")));
    assert!(!p.key_ok(Some("Bearer rk_bad")));
    assert!(!p.key_ok(Some("rk_good")), "scheme required");
    assert!(!p.key_ok(None));
    let open = policy(PolicyConfig::default());
    assert!(open.key_ok(None));
}

#[test]
fn allow_list_covers_v4_v6_and_mapped_addresses() {
    let p = policy(PolicyConfig {
        ip_allow: vec!["10.0.0.0/8".into(), "2001:db8::/32".into(), "192.0.2.7".into()],
        ..Default::default()
    });
    assert!(p.ip_ok("10.1.2.3".parse().unwrap()));
    assert!(p.ip_ok("::ffff:10.1.2.3".parse().unwrap()));
    assert!(p.ip_ok("2001:db8::1".parse().unwrap()));
    assert!(p.ip_ok("192.0.2.7".parse().unwrap()));
    assert!(!p.ip_ok("192.0.2.8".parse().unwrap()));
    assert!(!p.ip_ok("11.0.0.1".parse().unwrap()));
    assert!(
        policy(PolicyConfig::default()).ip_ok("203.0.113.1".parse().unwrap()),
        "empty allows all"
    );
}

#[test]
fn forwarded_for_is_believed_only_from_trusted_proxies() {
    let p =
        policy(PolicyConfig { trusted_proxies: vec!["127.0.0.1/32".into()], ..Default::default() });
    let proxy = "127.0.0.1".parse().unwrap();
    let stranger = "198.51.100.9".parse().unwrap();
    let xff = |lines: &[&str]| {
        let mut headers = http::HeaderMap::new();
        for line in lines {
            headers.append("x-forwarded-for", line.parse().unwrap());
        }
        headers
    };
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(p.client_ip(proxy, &xff(&["203.0.113.5"])), Ok(ip("203.0.113.5")));
    assert_eq!(
        p.client_ip(proxy, &xff(&["6.6.6.6, 203.0.113.5, 127.0.0.1"])),
        Ok(ip("203.0.113.5")),
        "right-most untrusted hop; a spoofed left entry is ignored"
    );
    assert_eq!(
        p.client_ip(proxy, &xff(&["10.9.9.9", "203.0.113.5"])),
        Ok(ip("203.0.113.5")),
        "a proxy's own second line names the client, not the client's first"
    );
    assert_eq!(
        p.client_ip(stranger, &xff(&["10.0.0.1"])),
        Ok(stranger),
        "untrusted peer cannot spoof"
    );
    assert!(p.client_ip(proxy, &xff(&["garbage"])).is_err(), "a malformed client entry is refused");
}

#[test]
fn origins() {
    let p = policy(PolicyConfig {
        allowed_origins: vec!["https://console.example".into()],
        ..Default::default()
    });
    assert!(p.origin_ok(None, Some("node:8000")));
    assert!(p.origin_ok(Some("https://console.example/"), Some("node:8000")));
    assert!(!p.origin_ok(Some("http://evil.example"), Some("node:8000")));
    // DNS rebinding: the attacker's name resolves to the node, so Origin and Host agree.
    assert!(!p.origin_ok(Some("http://evil.example:8000"), Some("evil.example:8000")));
    assert!(!p.origin_ok(Some("http://node:8000"), Some("node:8000")), "same-origin, not local");
    for local in ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST", "127.0.0.1"] {
        assert!(p.origin_ok(Some(&format!("http://{local}")), Some(local)), "{local}");
    }
    assert!(!p.origin_ok(Some("http://localhost:9999"), Some("localhost:8000")), "other port");
}

#[test]
fn blocked_and_disabled() {
    let p = policy(PolicyConfig {
        blocked: vec!["weather".into(), "notes.add".into()],
        disabled_packages: vec!["files".into()],
        ..Default::default()
    });
    assert!(p.package_hidden("weather") && p.package_hidden("files"));
    assert!(p.tool_hidden("notes", "notes.add"));
    assert!(!p.tool_hidden("notes", "notes.echo"));
}

#[test]
fn bad_entries_are_named() {
    let err = Policy::compile(PolicyConfig {
        ip_allow: vec!["10.0.0.0/33".into()],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err, PolicyError::BadCidr("10.0.0.0/33".into()));
    let err =
        Policy::compile(PolicyConfig { key_hashes: vec!["abc".into()], ..Default::default() })
            .unwrap_err();
    assert_eq!(err, PolicyError::BadKeyHash("abc".into()));
}
