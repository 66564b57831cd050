use super::*;
use ramen_node_contract::key_hash as hash_key;

fn policy(config: PolicyConfig) -> Policy {
    Policy::compile(config).unwrap()
}

/// Whether the policy lets `authorization` in.
fn lets_in(p: &Policy, authorization: Option<&str>) -> bool {
    futures::executor::block_on(p.authenticate(authorization)).is_ok()
}

#[test]
fn keys_are_checked_against_hashes() {
    let p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![hash_key("rk_good").into()],
        ..Default::default()
    });
    assert!(lets_in(&p, Some("Bearer rk_good")));
    assert!(!lets_in(&p, Some("Bearer rk_bad")));
    assert!(!lets_in(&p, Some("rk_good")), "scheme required");
    assert!(!lets_in(&p, None));
    let open = policy(PolicyConfig::default());
    assert!(lets_in(&open, None));
}

/// The digest cache: a key that matched is remembered (and still let in from there), one that
/// did not is not kept, and a key listed with an expiry is refused once it has passed even
/// though its digest is cached.
#[test]
fn matched_keys_are_cached_and_still_checked() {
    let p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![hash_key("rk_good").into()],
        ..Default::default()
    });
    assert!(lets_in(&p, Some("Bearer rk_good")));
    assert!(lets_in(&p, Some("Bearer rk_good")), "again, from the cache");
    assert!(!lets_in(&p, Some("Bearer rk_bad")));
    assert_eq!(p.key_cache.lock().keys().map(|k| &**k).collect::<Vec<_>>(), ["rk_good"]);
    assert!(!format!("{p:?}").contains("rk_good"), "a policy's Debug never shows a key");

    let mut p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![ramen_node_contract::NodeKey::new(hash_key("rk_soon"), i64::MAX)],
        ..Default::default()
    });
    assert!(lets_in(&p, Some("Bearer rk_soon")));
    p.keys[0].expires_at_unix_ms = 1;
    assert!(!lets_in(&p, Some("Bearer rk_soon")), "expired, though its digest is cached");
}

#[test]
fn an_expired_key_is_refused_and_a_live_one_kept() {
    let p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![
            ramen_node_contract::NodeKey::new(hash_key("rk_past"), 1),
            ramen_node_contract::NodeKey::new(hash_key("rk_future"), i64::MAX),
            hash_key("rk_forever").into(),
        ],
        ..Default::default()
    });
    assert!(!lets_in(&p, Some("Bearer rk_past")), "expired in 1970");
    assert!(lets_in(&p, Some("Bearer rk_future")));
    assert!(lets_in(&p, Some("Bearer rk_forever")));
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
    let err = Policy::compile(PolicyConfig {
        key_hashes: vec![String::from("abc").into()],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err, PolicyError::BadKeyHash("abc".into()));
}

#[tokio::test]
async fn a_key_caller_is_known_by_id_and_name_and_rules_decide_what_it_may_use() {
    let p = policy(PolicyConfig {
        require_key: true,
        key_hashes: vec![
            ramen_node_contract::NodeKey::new(hash_key("rk_ci"), 0).named("k_1", "ci-bot"),
            ramen_node_contract::NodeKey::new(hash_key("rk_other"), 0).named("k_2", "other"),
        ],
        auth: ramen_node_contract::NodeAuth {
            rules: vec![ramen_call_rules::Rule {
                keys: vec!["ci-bot".into()],
                allow: vec!["weather".into()],
                ..Default::default()
            }],
            ..Default::default()
        },
        ..Default::default()
    });
    let ci = p.authenticate(Some("Bearer rk_ci")).await.unwrap();
    assert!(matches!(&ci, CallerId::Key { id, name, .. } if &**id == "k_1" && &**name == "ci-bot"));
    let frame: serde_json::Value = serde_json::from_str(&ci.frame().unwrap()).unwrap();
    assert_eq!(frame, serde_json::json!({"kind": "key", "key_id": "k_1", "key_name": "ci-bot"}));
    assert!(!ci.frame().unwrap().contains("rk_ci"), "never the key");
    assert!(p.grant(&ci).name("weather", "weather.forecast"));
    assert!(!p.grant(&ci).name("notes", "notes.add"));
    let other = p.authenticate(Some("Bearer rk_other")).await.unwrap();
    assert!(p.grant(&other).is_nothing(), "a key no rule names may use nothing");
    assert_ne!(ci.owner(), other.owner(), "each key owns its own sessions");
    assert!(p.has_rules());

    let refused = p.authenticate(Some("Bearer rk_unknown")).await.unwrap_err();
    assert!(matches!(refused, Unauthenticated::Key), "keys only: the key refusal");
    assert_eq!(p.challenge(&refused), r#"Bearer realm="ramen", error="invalid_token""#);
}

#[tokio::test]
async fn an_oauth_environment_challenges_with_its_metadata_and_refuses_without_an_issuer() {
    let auth = ramen_node_contract::NodeAuth {
        mode: ramen_call_rules::AuthMode::Oauth,
        resource: "https://mcp.example.com/mcp/g/prod".into(),
        scopes: vec!["mcp:tools".into()],
        ..Default::default()
    };
    let p = policy(PolicyConfig { require_key: true, auth, ..Default::default() });
    let missing = p.authenticate(None).await.unwrap_err();
    assert_eq!(
        p.challenge(&missing),
        r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp/g/prod", scope="mcp:tools""#
    );
    // No issuer configured: every token is refused, as invalid (fail closed).
    let refused = p.authenticate(Some("Bearer eyJhbGciOiJSUzI1NiJ9.e30.x")).await.unwrap_err();
    assert!(p.challenge(&refused).contains(r#"error="invalid_token""#));
}
