use ramen_proto::zone::v1::NodeSecret;

use super::*;

fn config(digest: &str) -> pb::NodeConfig {
    pb::NodeConfig {
        environment: "prod".into(),
        snapshot: Some(common::Snapshot {
            commit: "c1".into(),
            location: "groups/g/snapshots/c1.tar.gz".into(),
            digest: digest.into(),
            requirements_hash: String::new(),
            environment: None,
        }),
        secrets: vec![NodeSecret { name: "API_TOKEN".into(), value: "s3cret".into() }],
        ..Default::default()
    }
}

#[test]
fn a_written_config_becomes_a_template() {
    let template = template(config(&format!("sha256:{}", "AB".repeat(32)))).unwrap();
    let snapshot = template.snapshot.as_ref().unwrap();
    assert_eq!(snapshot.digest, "ab".repeat(32), "the node wants bare lowercase hex");
    assert_eq!(template.secrets["API_TOKEN"], "s3cret");
    assert!(!format!("{template:?}").contains("s3cret"), "Debug names secrets, never their values");
    assert_eq!(template.connect_ports, Some(vec![80, 443]), "no egress entries: the web");
}

#[test]
fn the_groups_egress_becomes_the_sandboxs_ports() {
    let mut with_egress = config(&"a".repeat(64));
    with_egress.egress_allow = vec!["5432".into(), "api.example.com".into()];
    let template = template(with_egress).unwrap();
    assert_eq!(template.connect_ports, Some(vec![80, 443, 5432]));
    assert_eq!(template.sandbox(true).connect_ports, vec![80, 443, 5432]);
    assert!(!template.sandbox(false).enabled);
    let old = ConfigTemplate::default();
    assert_eq!(old.sandbox(true).connect_ports, vec![80, 443], "a template from before: the web");
}

#[test]
fn bad_configs_are_named() {
    let message = |c: pb::NodeConfig| template(c).unwrap_err().to_string();
    assert!(message(config("sha256:abc")).starts_with("config.snapshot.digest:"));
    assert!(message(pb::NodeConfig::default()).starts_with("config.snapshot: is required"));
    let mut bad_secret = config(&"a".repeat(64));
    bad_secret.secrets[0].name = "API-TOKEN".into();
    assert!(message(bad_secret).contains("not an environment variable name"));
    let mut bad_egress = config(&"a".repeat(64));
    bad_egress.egress_allow = vec!["db:http".into()];
    let said = message(bad_egress);
    assert!(said.starts_with("config.egress_allow:") && said.contains("\"db:http\""), "{said}");
}

#[test]
fn enums_map_both_ways() {
    for size in SizeClass::ALL {
        assert_eq!(size_from_proto("size", size_to_proto(size) as i32).unwrap(), size);
    }
    assert_eq!(track_filter(0).unwrap(), None);
    assert!(track_from_proto(0).is_err());
    assert_eq!(track_from_proto(2).unwrap(), TrackKind::Canary);
    assert!(provider_from_proto(9).is_err());
    assert_eq!(timestamp(1_500).unwrap().nanos, 500_000_000);
    assert_eq!(timestamp(0), None);
}
