//! A group's egress restrictions (`restrictions.egress_allow`): where its code may open TCP
//! connections. One meaning on every provider: the node's sandbox lets group code connect to
//! the listed **ports** (Landlock rules name ports, not addresses); a destination written with
//! an entry is recorded for the operator and enforced only where the network can (on
//! Kubernetes, within what the zone's NetworkPolicy allows). An empty list means the web:
//! ports 80 and 443.
//!
//! Entries:
//! - `5432`: that port, anywhere;
//! - `db.internal:5432`, `10.0.0.0/8:5432`, `[2001:db8::/32]:5432`: that port (to that place);
//! - `api.example.com`, `10.0.0.0/8` (no port): the web ports 80 and 443 (to that place).

use std::collections::BTreeSet;

/// The ports group code may connect to when its group lists none.
pub const WEB_PORTS: [u16; 2] = [80, 443];

/// An entry that is none of the forms above, named with the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("egress entry {entry:?} {reason}")]
pub struct EgressError {
    pub entry: String,
    pub reason: String,
}

/// The ports a list of entries allows (sorted, without repeats).
pub fn connect_ports(entries: &[String]) -> Result<Vec<u16>, EgressError> {
    if entries.is_empty() {
        return Ok(WEB_PORTS.to_vec());
    }
    let mut ports = BTreeSet::new();
    for entry in entries {
        ports.extend(entry_ports(entry)?);
    }
    Ok(ports.into_iter().collect())
}

/// Checks one entry (what the API refuses before storing it).
pub fn check(entry: &str) -> Result<(), EgressError> {
    entry_ports(entry).map(drop)
}

fn entry_ports(entry: &str) -> Result<Vec<u16>, EgressError> {
    let fail = |reason: &str| EgressError { entry: entry.to_owned(), reason: reason.to_owned() };
    if entry.is_empty() || entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(
            "is empty or holds spaces: write a port, a destination, or destination:port",
        ));
    }
    if entry.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(vec![port(entry).map_err(|r| fail(&r))?]);
    }
    let (destination, port_text) = split_port(entry);
    destination_ok(destination).map_err(|r| fail(&r))?;
    match port_text {
        Some(text) => Ok(vec![port(text).map_err(|r| fail(&r))?]),
        None => Ok(WEB_PORTS.to_vec()),
    }
}

/// `[v6]:port`, `host:port`, `cidr:port`; a bare IPv6 address or network has no port.
fn split_port(entry: &str) -> (&str, Option<&str>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((inside, after)) = rest.split_once(']')
    {
        return (inside, after.strip_prefix(':'));
    }
    match entry.rsplit_once(':') {
        Some((destination, port)) if !destination.contains(':') => (destination, Some(port)),
        _ => (entry, None),
    }
}

fn port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("has port {text:?}: a port is a number from 1 to 65535")),
    }
}

fn destination_ok(destination: &str) -> Result<(), String> {
    if destination.parse::<ipnet::IpNet>().is_ok()
        || destination.parse::<std::net::IpAddr>().is_ok()
    {
        return Ok(());
    }
    let host = destination.strip_prefix("*.").unwrap_or(destination);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if host.len() <= 253 && host.split('.').all(label_ok) {
        Ok(())
    } else {
        Err("is not a host name, an IP address or a CIDR".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(entries: &[&str]) -> Result<Vec<u16>, EgressError> {
        connect_ports(&entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn no_entry_means_the_web() {
        assert_eq!(ports(&[]).unwrap(), vec![80, 443]);
    }

    #[test]
    fn every_form_yields_its_ports() {
        assert_eq!(ports(&["5432"]).unwrap(), vec![5432]);
        assert_eq!(ports(&["db.internal:5432", "10.0.0.0/8:6379"]).unwrap(), vec![5432, 6379]);
        assert_eq!(ports(&["[2001:db8::/32]:8443"]).unwrap(), vec![8443]);
        assert_eq!(ports(&["api.example.com"]).unwrap(), vec![80, 443]);
        assert_eq!(
            ports(&["10.0.0.0/8", "2001:db8::/32", "*.example.com"]).unwrap(),
            vec![80, 443]
        );
        assert_eq!(ports(&["443", "api.example.com:443"]).unwrap(), vec![443], "443 only: no 80");
    }

    #[test]
    fn a_bad_entry_is_named_with_what_is_wrong() {
        for (entry, says) in [
            ("db:0", "from 1 to 65535"),
            ("99999", "from 1 to 65535"),
            ("db:http", "from 1 to 65535"),
            ("bad host!", "spaces"),
            ("under_score.example", "host name"),
            ("", "empty"),
            ("10.0.0.0/40:80", "host name"),
        ] {
            let err = check(entry).unwrap_err();
            assert_eq!(err.entry, entry);
            assert!(err.to_string().contains(says), "{entry}: {err}");
        }
    }
}
