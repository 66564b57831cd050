//! Names of the cloud resources, within each cloud's limits and distinct per placement.

use sha2::{Digest, Sha256};

use crate::{GROUP_TAG, MANAGED_BY, MANAGED_BY_TAG, ZONE_TAG};

/// `full` when it fits in `max` characters, else its start and a hash of the whole, so two
/// long names sharing a start never collide.
pub fn fit(full: &str, max: usize) -> String {
    if full.len() <= max {
        return full.to_owned();
    }
    let hash = hex::encode(Sha256::digest(full.as_bytes()));
    let head = full[..max - 9].trim_end_matches('-');
    format!("{head}-{}", &hash[..8])
}

/// An ELBv2 target group name: at most 32 characters, letters, digits and `-`.
pub fn target_group(group: &str, zone: &str) -> String {
    fit(&format!("ramen-{group}-{zone}"), 32)
}

/// An IAM role name: at most 64 characters (`ramen-<group>-<zone>`, the namespace's name, fits).
pub fn role(group: &str, zone: &str) -> String {
    fit(&format!("ramen-{group}-{zone}"), 64)
}

/// The WAFv2 IP set of a group's networks of one family.
pub fn ip_set(group: &str, v6: bool) -> String {
    fit(&format!("ramen-{group}-{}", if v6 { "ipv6" } else { "ipv4" }), 128)
}

/// The group's rule in the shared web ACL.
pub fn web_acl_rule(group: &str) -> String {
    fit(&format!("ramen-{group}"), 128)
}

/// A Google service account id: 6 to 30 characters.
pub fn service_account(group: &str, zone: &str) -> String {
    fit(&format!("ramen-{group}-{zone}"), 30)
}

/// A Compute resource name (at most 63 characters): the group's backend service, health check
/// and security policy are `ramen-<group>`; a zone's backend service `ramen-<group>-<zone>`.
pub fn compute(group: &str, zone: Option<&str>) -> String {
    match zone {
        Some(zone) => fit(&format!("ramen-{group}-{zone}"), 63),
        None => fit(&format!("ramen-{group}"), 63),
    }
}

/// The ownership marker in a Compute resource's (or route rule's) description, where AWS has
/// tags: `ramen.io/managed-by=ramen ramen.io/group=<g>[ ramen.io/zone=<z>]`.
pub fn marker(group: &str, zone: Option<&str>) -> String {
    let mut marker = format!("{MANAGED_BY_TAG}={MANAGED_BY} {GROUP_TAG}={group}");
    if let Some(zone) = zone {
        marker.push_str(&format!(" {ZONE_TAG}={zone}"));
    }
    marker
}

/// Whether a description carries the marker of `group` (and of `zone`: `Some(None)` = the
/// group-wide resource, `None` = any of the group's).
pub fn marked(description: Option<&str>, group: &str, zone: Option<Option<&str>>) -> bool {
    let words: Vec<&str> = description.unwrap_or_default().split_whitespace().collect();
    let has = |key: &str, value: &str| words.contains(&format!("{key}={value}").as_str());
    let zone_word = words.iter().find(|w| w.starts_with(&format!("{ZONE_TAG}=")));
    has(MANAGED_BY_TAG, MANAGED_BY)
        && has(GROUP_TAG, group)
        && match zone {
            None => true,
            Some(None) => zone_word.is_none(),
            Some(Some(zone)) => has(ZONE_TAG, zone),
        }
}

/// The request paths of a group on the shared hostname.
pub fn group_paths(group: &str) -> [String; 2] {
    [format!("/mcp/{group}"), format!("/mcp/{group}/*")]
}

/// The partition of a region's ARNs.
pub fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// A web ACL's `(name, id)` from its ARN (`…:regional/webacl/<name>/<id>`).
pub fn web_acl_name_id(arn: &str) -> Option<(&str, &str)> {
    let rest = arn.split_once(":regional/webacl/")?.1;
    let (name, id) = rest.split_once('/')?;
    (!name.is_empty() && !id.is_empty() && !id.contains('/')).then_some((name, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_fit_and_stay_distinct() {
        assert_eq!(target_group("team", "us-a"), "ramen-team-us-a");
        let a = target_group("platform-tools", "us-east-1a-blue");
        let b = target_group("platform-tools", "us-east-1b-blue");
        assert!(a.len() <= 32 && b.len() <= 32, "{a} {b}");
        assert_ne!(a, b);
        assert!(a.starts_with("ramen-platform-tools") && !a.contains("--"), "{a}");
    }

    #[test]
    fn markers_tell_a_groups_and_a_zones_resources_apart() {
        let zone = marker("team", Some("us-a"));
        let group = marker("team", None);
        assert!(marked(Some(&zone), "team", Some(Some("us-a"))));
        assert!(!marked(Some(&zone), "team", Some(Some("us-b"))));
        assert!(!marked(Some(&zone), "team", Some(None)));
        assert!(marked(Some(&group), "team", Some(None)));
        assert!(marked(Some(&zone), "team", None) && marked(Some(&group), "team", None));
        assert!(!marked(Some(&group), "team-b", None));
        assert!(!marked(Some("made by hand"), "team", None) && !marked(None, "team", None));
        let long = service_account("platform-tools", "us-central1-a");
        assert!(long.len() <= 30 && long != service_account("platform-tools", "us-central1-b"));
    }

    #[test]
    fn web_acl_arns_split_into_name_and_id() {
        let arn = "arn:aws:wafv2:us-east-1:123456789012:regional/webacl/edge/0a1b-2c";
        assert_eq!(web_acl_name_id(arn), Some(("edge", "0a1b-2c")));
        assert_eq!(web_acl_name_id("arn:aws:wafv2:us-east-1:1:global/webacl/edge/1"), None);
        assert_eq!(partition("cn-north-1"), "aws-cn");
    }
}
