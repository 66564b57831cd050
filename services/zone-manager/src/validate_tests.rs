use super::*;

fn message(err: Error) -> String {
    err.to_string()
}

#[test]
fn dns_labels() {
    for good in ["a", "local-a", "z9", "a-b-c"] {
        dns_label("name", good).unwrap();
    }
    for (bad, why) in [
        ("", "is required"),
        ("Local", "lowercase"),
        ("9lives", "start with a lowercase letter"),
        ("a-", "end with `-`"),
        ("a_b", "lowercase letters, digits and `-`"),
        ("a.b", "lowercase letters, digits and `-`"),
    ] {
        let text = message(dns_label("name", bad).unwrap_err());
        assert!(text.starts_with("name:") && text.contains(why), "{bad:?}: {text}");
    }
    let long = "a".repeat(64);
    assert!(message(dns_label("name", &long).unwrap_err()).contains("longer than 63"));
}

#[test]
fn namespace_length_is_checked() {
    assert_eq!(namespace("team", "local-a").unwrap(), "ramen-team-local-a");
    let err = message(namespace(&"g".repeat(40), &"z".repeat(20)).unwrap_err());
    assert!(err.contains("at most 56"), "{err}");
}

#[test]
fn regions_per_provider() {
    region(ProviderKind::Local, "").unwrap();
    assert!(message(region(ProviderKind::Local, "us-east-1a").unwrap_err()).contains("no region"));
    for good in ["us-central1-a", "europe-west4-b", "northamerica-northeast1-c", "me-central2-a"] {
        region(ProviderKind::Gcp, good).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    for bad in ["", "us-central1", "us-east-1a", "US-central1-a", "us-central-a", "us-central1-ab"]
    {
        assert!(
            message(region(ProviderKind::Gcp, bad).unwrap_err()).contains("not a GCP zone"),
            "{bad}"
        );
    }
    for good in ["us-east-1a", "eu-central-1b", "ap-southeast-2c", "us-gov-west-1a"] {
        region(ProviderKind::Aws, good).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    for bad in ["", "us-east-1", "us-central1-a", "useast-1a", "us-east-a", "u-east-1a"] {
        assert!(
            message(region(ProviderKind::Aws, bad).unwrap_err()).contains("not an AWS"),
            "{bad}"
        );
    }
}

#[test]
fn sizes_default_to_all_and_dedupe() {
    assert_eq!(allowed_sizes(vec![]), SizeClass::ALL.to_vec());
    assert_eq!(
        allowed_sizes(vec![SizeClass::L, SizeClass::S, SizeClass::L]),
        vec![SizeClass::S, SizeClass::L]
    );
}

#[test]
fn counts() {
    worker_count(1, 50).unwrap();
    worker_count(50, 50).unwrap();
    assert!(message(worker_count(0, 50).unwrap_err()).contains("at least 1"));
    assert!(message(worker_count(51, 50).unwrap_err()).contains("above the maximum of 50"));
}

#[test]
fn cidrs_are_normalised() {
    let input: Vec<String> =
        ["10.0.0.0/8", " 192.0.2.7 ", "2001:db8::/32", "::1", "::ffff:10.1.0.0/112", "10.0.0.0/8"]
            .map(String::from)
            .to_vec();
    assert_eq!(
        cidrs(&input).unwrap(),
        vec!["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "::1/128", "10.1.0.0/16"]
    );
    assert!(cidrs(&[]).unwrap().is_empty());
}

#[test]
fn bad_cidrs_are_named() {
    let err = message(cidrs(&["10.0.0.1/8".into()]).unwrap_err());
    assert!(err.contains("host bits") && err.contains("10.0.0.0/8"), "{err}");
    let err = message(cidrs(&["10.0.0.0/33".into()]).unwrap_err());
    assert!(err.contains("`10.0.0.0/33` is not"), "{err}");
    let err = message(cidrs(&["example.com".into()]).unwrap_err());
    assert!(err.contains("`example.com` is not"), "{err}");
    assert!(message(cidrs(&[" ".into()]).unwrap_err()).contains("empty"));
    let many: Vec<String> = (0..300).map(|i| format!("10.0.{}.{}", i / 256, i % 256)).collect();
    assert!(message(cidrs(&many).unwrap_err()).contains("at most 256"));
}

#[test]
fn names_of_packages_secrets_and_hashes() {
    package("weather").unwrap();
    package("_private2").unwrap();
    assert!(package("weather.forecast").is_err());
    assert!(package("2fast").is_err());
    secret_name("API_TOKEN").unwrap();
    assert!(secret_name("API-TOKEN").is_err());
    key_hash(&"a".repeat(64)).unwrap();
    assert!(key_hash("abc").is_err());
}

mod properties {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use proptest::prelude::*;

    use super::*;

    fn network() -> impl Strategy<Value = String> {
        prop_oneof![
            (any::<u32>(), 0u8..=32).prop_map(|(ip, len)| {
                let net = ipnet::Ipv4Net::new(Ipv4Addr::from(ip), len).unwrap().trunc();
                net.to_string()
            }),
            (any::<u128>(), 0u8..=128).prop_map(|(ip, len)| {
                let net = ipnet::Ipv6Net::new(Ipv6Addr::from(ip), len).unwrap().trunc();
                net.to_string()
            }),
            any::<u32>().prop_map(|ip| IpAddr::V4(Ipv4Addr::from(ip)).to_string()),
        ]
    }

    proptest! {
        /// Anything: no panic, and a refusal names the field, is one line and is short.
        #[test]
        fn any_rule_list_is_judged(values in proptest::collection::vec(any::<String>(), 0..8)) {
            if let Err(err) = cidrs(&values) {
                let text = err.to_string();
                prop_assert!(text.starts_with("cidrs:"), "{text}");
                prop_assert!(!text.contains('\n') && text.len() < 400, "{text}");
            }
        }

        /// Networks and addresses are accepted, normalised once and for all (normalising the
        /// result changes nothing), and each comes out as a network that parses back.
        #[test]
        fn networks_are_accepted_and_normalised(values in proptest::collection::vec(network(), 1..8)) {
            let normal = cidrs(&values).unwrap();
            prop_assert!(normal.len() <= values.len());
            prop_assert_eq!(cidrs(&normal).unwrap(), normal.clone());
            for net in &normal {
                let parsed: ipnet::IpNet = net.parse().unwrap();
                prop_assert_eq!(parsed.addr(), parsed.network());
            }
        }

        /// A prefix with host bits is refused, and the network it suggests is accepted.
        #[test]
        fn host_bits_are_refused_with_an_acceptable_suggestion(ip in any::<u32>(), len in 1u8..32) {
            let net = ipnet::Ipv4Net::new(Ipv4Addr::from(ip), len).unwrap();
            prop_assume!(net.addr() != net.network());
            let text = cidrs(&[net.to_string()]).unwrap_err().to_string();
            let suggested = net.trunc().to_string();
            prop_assert!(text.contains(&format!("did you mean `{suggested}`")), "{text}");
            prop_assert!(cidrs(&[suggested]).is_ok());
        }

        #[test]
        fn any_name_is_judged(value in any::<String>()) {
            if let Err(err) = dns_label("name", &value) {
                let text = err.to_string();
                prop_assert!(text.starts_with("name:") && !text.contains('\n'), "{text}");
            }
        }
    }
}
