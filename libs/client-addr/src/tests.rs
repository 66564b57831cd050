use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;

fn headers(lines: &[&str]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in lines {
        headers.append(X_FORWARDED_FOR, line.parse().unwrap());
    }
    headers
}

fn lb() -> IpAddr {
    "10.1.2.3".parse().unwrap()
}

fn trusted() -> Vec<IpNet> {
    parse_trusted("t", &["10.0.0.0/8".into()]).unwrap()
}

#[test]
fn the_haproxy_second_line_is_read_not_the_clients_first() {
    let two = headers(&["10.9.9.9", "203.0.113.7"]);
    assert_eq!(client_ip(lb(), &two, &[]).unwrap(), lb(), "an untrusted peer is the client");
    let trusted = parse_trusted("t", &["10.1.2.3/32".into()]).unwrap();
    assert_eq!(client_ip(lb(), &two, &trusted).unwrap().to_string(), "203.0.113.7");
    let one = headers(&["203.0.113.7"]);
    assert_eq!(client_ip(lb(), &one, &trusted).unwrap().to_string(), "203.0.113.7");
}

#[test]
fn trusted_hops_are_skipped_and_client_words_left_of_the_client_never_read() {
    let spoofed = headers(&["garbage, 1.1.1.1, 198.51.100.7, 10.0.0.5"]);
    assert_eq!(client_ip(lb(), &spoofed, &trusted()).unwrap().to_string(), "198.51.100.7");
    assert_eq!(
        client_ip("203.0.113.9".parse().unwrap(), &spoofed, &trusted()).unwrap().to_string(),
        "203.0.113.9"
    );
    assert_eq!(client_ip(lb(), &HeaderMap::new(), &trusted()).unwrap(), lb());
    let all_trusted = headers(&["10.0.0.7, 10.0.0.5"]);
    assert_eq!(client_ip(lb(), &all_trusted, &trusted()).unwrap().to_string(), "10.0.0.7");
}

#[test]
fn a_malformed_entry_where_the_client_should_be_is_refused() {
    for bad in ["203.0.113.7:5000", "unknown", "", "not an address", "[2001:db8::1]:80"] {
        let h = headers(&[&format!("1.1.1.1, {bad}, 10.0.0.5")]);
        let err = client_ip(lb(), &h, &trusted()).unwrap_err();
        assert_eq!(err, ClientAddrError::Malformed { entry: bad.to_owned() }, "{bad}");
        assert!(err.to_string().contains("not an IP address"));
    }
    let mut h = HeaderMap::new();
    h.append(X_FORWARDED_FOR, http::HeaderValue::from_bytes(b"\xff").unwrap());
    assert_eq!(client_ip(lb(), &h, &trusted()), Err(ClientAddrError::NotText));
}

#[test]
fn mapped_addresses_are_unmapped_and_bad_proxy_lists_named() {
    let mapped: IpAddr = "::ffff:203.0.113.9".parse().unwrap();
    assert_eq!(client_ip(mapped, &HeaderMap::new(), &[]).unwrap().to_string(), "203.0.113.9");
    let mapped_lb: IpAddr = "::ffff:10.1.2.3".parse().unwrap();
    let h = headers(&["::ffff:198.51.100.7, ::ffff:10.0.0.5"]);
    assert_eq!(client_ip(mapped_lb, &h, &trusted()).unwrap().to_string(), "198.51.100.7");
    let err = parse_trusted("edge.trusted_proxies", &["nope".into()]).unwrap_err();
    assert!(err.contains("edge.trusted_proxies") && err.contains("nope"), "{err}");
}

fn public_v4() -> impl Strategy<Value = IpAddr> {
    (11u8..=223, any::<u8>(), any::<u8>(), any::<u8>())
        .prop_map(|(a, b, c, d)| IpAddr::V4(Ipv4Addr::new(a, b, c, d)))
}

fn trusted_hop() -> impl Strategy<Value = IpAddr> {
    (any::<u8>(), any::<u8>(), any::<u8>())
        .prop_map(|(b, c, d)| IpAddr::V4(Ipv4Addr::new(10, b, c, d)))
}

fn any_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        public_v4(),
        trusted_hop(),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n)))
    ]
}

/// What a client may write at the left of the chain: anything printable without a comma.
fn client_words() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[ -+--~]{0,12}", 0..4)
}

/// Splits `entries` into header lines at the given cut points.
fn lines(entries: &[String], cuts: &[usize]) -> Vec<String> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (entries.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([entries.len()]) {
        if cut > start {
            out.push(entries[start..cut].join(", "));
            start = cut;
        }
    }
    out
}

fn map(lines: &[String]) -> HeaderMap {
    headers(&lines.iter().map(String::as_str).collect::<Vec<_>>())
}

proptest! {
    /// The client is the right-most untrusted entry, whatever the client wrote left of it and
    /// however proxies spread the chain over lines.
    #[test]
    fn the_client_is_found_behind_any_number_of_trusted_hops_on_any_lines(
        words in client_words(),
        client in public_v4(),
        hops in prop::collection::vec(trusted_hop(), 0..4),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
        mapped in any::<bool>(),
    ) {
        let shown = |ip: IpAddr| match (ip, mapped) {
            (IpAddr::V4(v4), true) => v4.to_ipv6_mapped().to_string(),
            _ => ip.to_string(),
        };
        let entries: Vec<String> = words.into_iter()
            .chain([shown(client)])
            .chain(hops.iter().map(|h| shown(*h)))
            .collect();
        let got = client_ip(lb(), &map(&lines(&entries, &cuts)), &trusted());
        prop_assert_eq!(got, Ok(client));
    }

    /// One line or many: the same answer, refusal included.
    #[test]
    fn lines_are_joined_in_order(
        entries in prop::collection::vec(prop_oneof![
            any_ip().prop_map(|ip| ip.to_string()),
            "[ -+--~]{0,8}",
        ], 1..6),
        cuts in prop::collection::vec(any::<usize>(), 0..5),
    ) {
        let one = client_ip(lb(), &map(&[entries.join(", ")]), &trusted());
        let many = client_ip(lb(), &map(&lines(&entries, &cuts)), &trusted());
        prop_assert_eq!(one, many);
    }

    /// A peer that is not a trusted proxy is the client, whatever it claims.
    #[test]
    fn an_untrusted_peer_is_never_overridden(
        peer in public_v4(),
        entries in prop::collection::vec("[ -~]{0,16}", 0..4),
    ) {
        let h = map(&entries.iter().filter(|e| http::HeaderValue::from_str(e).is_ok()).cloned().collect::<Vec<_>>());
        prop_assert_eq!(client_ip(peer, &h, &trusted()), Ok(peer));
    }

    /// A malformed entry in the client's place is refused, never skipped to what stands left.
    #[test]
    fn a_malformed_client_entry_is_refused(
        words in client_words(),
        bad in prop_oneof![
            public_v4().prop_map(|ip| format!("{ip}:443")),
            Just("unknown".to_owned()),
            Just(String::new()),
            "[a-z_]{1,10}",
        ],
        hops in prop::collection::vec(trusted_hop(), 0..3),
    ) {
        let entries: Vec<String> = words.into_iter()
            .chain([bad.clone()])
            .chain(hops.iter().map(ToString::to_string))
            .collect();
        let got = client_ip(lb(), &map(&[entries.join(", ")]), &trusted());
        prop_assert_eq!(got, Err(ClientAddrError::Malformed { entry: bad }));
    }
}
