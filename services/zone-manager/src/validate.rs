//! Input rules: names, regions per provider, sizes, counts, CIDRs. Each failure names the field
//! and says what would be accepted.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};

use crate::error::{Error, Result};

/// A refused value as its error shows it: escaped, cut when long, without the quotes (the
/// messages put it in backticks).
fn shown(value: &str) -> String {
    let quoted = ramen_service::validate::quoted(value);
    match quoted.strip_prefix('"').and_then(|q| q.rsplit_once('"')) {
        Some((inner, rest)) => format!("{inner}{rest}"),
        None => quoted,
    }
}
use crate::model::{ProviderKind, SizeClass};

/// Kubernetes namespaces are DNS labels of at most 63 characters.
pub const MAX_NAMESPACE_LEN: usize = 63;
/// More rules than this is a list nobody can review; the edge and the node check each one.
pub const MAX_IP_RULES: usize = 256;

/// A DNS label ([`ramen_service::validate::dns_label`]).
pub fn dns_label(field: &'static str, value: &str) -> Result<()> {
    ramen_service::validate::dns_label(value).map_err(|reason| Error::invalid(field, reason))
}

/// `ramen-<group>-<zone>` must itself be a DNS label.
pub fn namespace(group: &str, zone: &str) -> Result<String> {
    let namespace = format!("ramen-{group}-{zone}");
    if namespace.len() > MAX_NAMESPACE_LEN {
        return Err(Error::invalid(
            "group",
            format!(
                "namespace `{namespace}` would be {} characters; group and zone names together may have at most {} (a Kubernetes namespace is at most 63)",
                namespace.len(),
                MAX_NAMESPACE_LEN - "ramen--".len()
            ),
        ));
    }
    Ok(namespace)
}

/// GCP zones look like `us-central1-a`; AWS availability zones like `us-east-1a`; local zones
/// have no region.
pub fn region(provider: ProviderKind, region: &str) -> Result<()> {
    match provider {
        ProviderKind::Local if region.is_empty() => Ok(()),
        ProviderKind::Local => Err(Error::invalid(
            "region",
            format!("{region:?}: a local zone has no region; leave it empty"),
        )),
        ProviderKind::Gcp if is_gcp_zone(region) => Ok(()),
        ProviderKind::Gcp => Err(Error::invalid(
            "region",
            format!(
                "{region:?} is not a GCP zone (e.g. `us-central1-a`: region, then `-` and a zone letter)"
            ),
        )),
        ProviderKind::Aws if is_aws_zone(region) => Ok(()),
        ProviderKind::Aws => Err(Error::invalid(
            "region",
            format!(
                "{region:?} is not an AWS availability zone (e.g. `us-east-1a`: region followed by a zone letter)"
            ),
        )),
    }
}

/// `<area>-<location><digits>-<letter>`: `us-central1-a`, `europe-west4-b`
/// ([`ramen_service::rules::GCP_ZONE`], the rule the API document states).
fn is_gcp_zone(value: &str) -> bool {
    ramen_service::rules::GCP_ZONE.accepts(value)
}

/// `<area>[-gov]-<location>-<digit(s)><letter>`: `us-east-1a`, `ap-southeast-2c`, `us-gov-west-1a`
/// ([`ramen_service::rules::AWS_ZONE`]).
fn is_aws_zone(value: &str) -> bool {
    ramen_service::rules::AWS_ZONE.accepts(value)
}

/// Empty = every size; duplicates are dropped; the result is sorted s, m, l.
pub fn allowed_sizes(sizes: Vec<SizeClass>) -> Vec<SizeClass> {
    let mut sizes = if sizes.is_empty() { SizeClass::ALL.to_vec() } else { sizes };
    sizes.sort();
    sizes.dedup();
    sizes
}

pub fn worker_count(count: u32, max: u32) -> Result<()> {
    if count == 0 {
        return Err(Error::invalid(
            "count",
            "must be at least 1 (scale a track to zero with ScaleTrack)",
        ));
    }
    if count > max {
        return Err(Error::invalid(
            "count",
            format!("{count} is above the maximum of {max} workers per placement"),
        ));
    }
    Ok(())
}

/// A package is an importable Python package name ([`ramen_service::rules::PACKAGE_NAME`]).
pub fn package(name: &str) -> Result<()> {
    if ramen_service::rules::PACKAGE_NAME.accepts(name) {
        Ok(())
    } else {
        Err(Error::invalid("package", format!("{name:?} is not a Python package name")))
    }
}

/// Secrets become environment variables: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn secret_name(name: &str) -> Result<()> {
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "config.secrets",
            format!("{name:?} is not an environment variable name"),
        ))
    }
}

pub fn key_hash(hex: &str) -> Result<()> {
    if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(Error::invalid(
            "key_hashes",
            format!("{hex:?} is not a hex SHA-256 (64 hex characters)"),
        ))
    }
}

/// Parses, checks and normalises an IP rule list: bare addresses become /32 (/128), IPv4-mapped
/// IPv6 ranges become IPv4 (the node matches mapped peers as IPv4), duplicates are dropped.
/// A prefix with host bits set (`10.0.0.1/8`) is refused rather than silently widened.
pub fn cidrs(values: &[String]) -> Result<Vec<String>> {
    if values.len() > MAX_IP_RULES {
        return Err(Error::invalid(
            "cidrs",
            format!("{} rules; at most {MAX_IP_RULES}", values.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(values.len());
    for raw in values {
        let net = cidr(raw.trim())?;
        let text = net.to_string();
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

fn cidr(value: &str) -> Result<IpNet> {
    if value.is_empty() {
        return Err(Error::invalid("cidrs", "an entry is empty"));
    }
    let net = match value.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => match value.parse::<IpAddr>() {
            Ok(ip) => IpNet::from(ip),
            Err(_) => {
                return Err(Error::invalid(
                    "cidrs",
                    format!(
                        "`{}` is not an IPv4/IPv6 address or CIDR (e.g. 10.0.0.0/8, 2001:db8::/32, 192.0.2.7)",
                        shown(value)
                    ),
                ));
            }
        },
    };
    if net.addr() != net.network() {
        return Err(Error::invalid(
            "cidrs",
            format!("`{value}` has host bits set; did you mean `{}`?", net.trunc()),
        ));
    }
    Ok(unmap(net))
}

fn unmap(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && v6.prefix_len() >= 96
        && let Some(v4) = v6.addr().to_ipv4_mapped()
        && let Ok(mapped) = Ipv4Net::new(v4, v6.prefix_len() - 96)
    {
        return IpNet::V4(mapped);
    }
    net
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
