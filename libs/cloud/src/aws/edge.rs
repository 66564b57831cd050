//! The group's edge rule on AWS: WAFv2 IP sets `ramen-<group>-ipv4` / `-ipv6` holding the
//! networks the group's zones allow, and a rule `ramen-<group>` in the shared web ACL that
//! blocks a request to the group's paths from anywhere else. Allow-all is the rule's absence.
//!
//! Both are read-modify-write objects guarded by lock tokens: a write with a stale token is
//! refused by WAF (`WAFOptimisticLockException`) and redone from a fresh read, never forced.

use aws_sdk_wafv2::Client;
use aws_sdk_wafv2::primitives::Blob;
use aws_sdk_wafv2::types::{
    AndStatement, BlockAction, ByteMatchStatement, FieldToMatch, IpAddressVersion,
    IpSetReferenceStatement, NotStatement, OrStatement, PositionalConstraint, Rule, RuleAction,
    Scope, Statement, Tag, TextTransformation, TextTransformationType, UriPath, VisibilityConfig,
    WebAcl,
};
use ipnet::IpNet;
use ramen_config::ClusterConfig;

use super::errors::{code, sdk_error};
use crate::{
    ATTEMPTS, CloudError, EdgeRule, GROUP_TAG, MANAGED_BY, MANAGED_BY_TAG, Made, names, pause,
};

const STALE: &str = "WAFOptimisticLockException";
const MISSING: &str = "WAFNonexistentItemException";
/// Where ramen's rules start in a web ACL, above the operator's own first rules.
const FIRST_PRIORITY: i32 = 100;

pub async fn set(
    waf: &Client,
    group: &str,
    cluster: &ClusterConfig,
    rule: EdgeRule<'_>,
) -> Result<Made, CloudError> {
    let acl = names::web_acl_name_id(&cluster.web_acl_arn).ok_or_else(|| {
        CloudError::NotConfigured(format!(
            "kubernetes.clusters.*.web_acl_arn {:?} is not a regional web ACL ARN",
            cluster.web_acl_arn
        ))
    })?;
    let nets = match rule {
        EdgeRule::Only(nets) if !nets.is_empty() => nets,
        EdgeRule::Only(_) | EdgeRule::Everyone => {
            let changed = put_acl_rule(waf, acl, group, None).await?;
            let note =
                if changed { "web ACL rule removed: everyone allowed" } else { "everyone allowed" };
            return Ok(Made { resources: Vec::new(), note: note.into() });
        }
        EdgeRule::Remove => {
            put_acl_rule(waf, acl, group, None).await?;
            let mut gone = Vec::new();
            for v6 in [false, true] {
                if delete_ip_set(waf, &names::ip_set(group, v6)).await? {
                    gone.push(names::ip_set(group, v6));
                }
            }
            let note = format!("web ACL rule and IP sets removed ({})", gone.join(", "));
            return Ok(Made { resources: Vec::new(), note });
        }
    };
    let mut references = Vec::new();
    let mut counts = Vec::new();
    for v6 in [false, true] {
        let addresses: Vec<String> = nets
            .iter()
            .filter(|n| matches!(n, IpNet::V6(_)) == v6)
            .map(|n| n.trunc().to_string())
            .collect();
        let name = names::ip_set(group, v6);
        if addresses.is_empty() {
            // A family no zone lists: blocked by the rule; an old set is emptied, not referenced.
            if find_ip_set(waf, &name).await?.is_some() {
                ensure_ip_set(waf, group, &name, v6, &addresses).await?;
            }
            continue;
        }
        counts.push(format!("{} {}", addresses.len(), if v6 { "IPv6" } else { "IPv4" }));
        references.push(ensure_ip_set(waf, group, &name, v6, &addresses).await?);
    }
    put_acl_rule(waf, acl, group, Some(&references)).await?;
    Ok(Made {
        resources: references,
        note: format!(
            "web ACL rule {} allows {} network(s)",
            names::web_acl_rule(group),
            counts.join(" + ")
        ),
    })
}

struct IpSetRef {
    id: String,
    arn: String,
}

async fn find_ip_set(waf: &Client, name: &str) -> Result<Option<IpSetRef>, CloudError> {
    let mut marker: Option<String> = None;
    loop {
        let page = waf
            .list_ip_sets()
            .scope(Scope::Regional)
            .set_next_marker(marker.take())
            .limit(100)
            .send()
            .await;
        let page = page.map_err(|e| sdk_error("WAFv2", "ListIPSets", e))?;
        if let Some(found) = page.ip_sets().iter().find(|s| s.name() == Some(name)) {
            return Ok(Some(IpSetRef {
                id: found.id().unwrap_or_default().to_owned(),
                arn: found.arn().unwrap_or_default().to_owned(),
            }));
        }
        match page.next_marker() {
            Some(next) if !next.is_empty() && !page.ip_sets().is_empty() => {
                marker = Some(next.to_owned())
            }
            _ => return Ok(None),
        }
    }
}

/// The IP set with exactly `addresses` (made if missing); answers its ARN.
async fn ensure_ip_set(
    waf: &Client,
    group: &str,
    name: &str,
    v6: bool,
    addresses: &[String],
) -> Result<String, CloudError> {
    for attempt in 0..ATTEMPTS {
        let Some(found) = find_ip_set(waf, name).await? else {
            let version = if v6 { IpAddressVersion::Ipv6 } else { IpAddressVersion::Ipv4 };
            let create = waf
                .create_ip_set()
                .name(name)
                .scope(Scope::Regional)
                .ip_address_version(version)
                .set_addresses(Some(addresses.to_vec()))
                .description(format!("ramen: networks the zones of group {group} allow"))
                .set_tags(Some(tags(group)));
            match create.send().await {
                Ok(created) => {
                    let arn = created.summary().and_then(|s| s.arn()).unwrap_or_default();
                    return Ok(arn.to_owned());
                }
                Err(err) if code(&err) == Some("WAFDuplicateItemException") => {
                    pause(attempt).await;
                    continue;
                }
                Err(err) => return Err(sdk_error("WAFv2", "CreateIPSet", err)),
            }
        };
        refuse_unless_ours(waf, name, &found.arn, group).await?;
        let got = waf.get_ip_set().name(name).scope(Scope::Regional).id(&found.id).send().await;
        let got = got.map_err(|e| sdk_error("WAFv2", "GetIPSet", e))?;
        let current: Vec<String> = got.ip_set().map(|s| s.addresses().to_vec()).unwrap_or_default();
        if same_set(&current, addresses) {
            return Ok(found.arn);
        }
        let update = waf
            .update_ip_set()
            .name(name)
            .scope(Scope::Regional)
            .id(&found.id)
            .set_addresses(Some(addresses.to_vec()))
            .lock_token(got.lock_token().unwrap_or_default());
        match update.send().await {
            Ok(_) => return Ok(found.arn),
            // Someone changed it since our read: read again, never overwrite blindly.
            Err(err) if code(&err) == Some(STALE) => pause(attempt).await,
            Err(err) => return Err(sdk_error("WAFv2", "UpdateIPSet", err)),
        }
    }
    Err(stale(&format!("IP set {name}")))
}

/// Deletes the IP set; `false` when there was none.
async fn delete_ip_set(waf: &Client, name: &str) -> Result<bool, CloudError> {
    for attempt in 0..ATTEMPTS {
        let Some(found) = find_ip_set(waf, name).await? else { return Ok(false) };
        let got = waf.get_ip_set().name(name).scope(Scope::Regional).id(&found.id).send().await;
        let got = match got {
            Ok(got) => got,
            Err(err) if code(&err) == Some(MISSING) => return Ok(false),
            Err(err) => return Err(sdk_error("WAFv2", "GetIPSet", err)),
        };
        let delete = waf
            .delete_ip_set()
            .name(name)
            .scope(Scope::Regional)
            .id(&found.id)
            .lock_token(got.lock_token().unwrap_or_default());
        match delete.send().await {
            Ok(_) => return Ok(true),
            Err(err) if code(&err) == Some(MISSING) => return Ok(false),
            Err(err) if code(&err) == Some(STALE) => pause(attempt).await,
            Err(err) if code(&err) == Some("WAFAssociatedItemException") => {
                return Err(CloudError::Unavailable(format!(
                    "IP set {name} is still referenced by a web ACL rule; retrying"
                )));
            }
            Err(err) => return Err(sdk_error("WAFv2", "DeleteIPSet", err)),
        }
    }
    Err(stale(&format!("IP set {name}")))
}

/// Puts the group's rule in the web ACL (blocking the group's paths from outside the
/// `references` sets), or takes it out (`None`); `true` when the ACL changed.
async fn put_acl_rule(
    waf: &Client,
    (acl_name, acl_id): (&str, &str),
    group: &str,
    references: Option<&[String]>,
) -> Result<bool, CloudError> {
    let rule_name = names::web_acl_rule(group);
    for attempt in 0..ATTEMPTS {
        let got = waf.get_web_acl().name(acl_name).scope(Scope::Regional).id(acl_id).send().await;
        let got = match got {
            Ok(got) => got,
            Err(err) if code(&err) == Some(MISSING) => {
                return Err(CloudError::NotConfigured(format!(
                    "web ACL {acl_name} ({acl_id}) of kubernetes.clusters.*.web_acl_arn does not exist"
                )));
            }
            Err(err) => return Err(sdk_error("WAFv2", "GetWebACL", err)),
        };
        let acl = got.web_acl().cloned().ok_or_else(|| {
            CloudError::Unavailable(format!("GetWebACL answered no web ACL {acl_name}"))
        })?;
        let existing = acl.rules().iter().find(|r| r.name() == rule_name);
        let mut rules: Vec<Rule> =
            acl.rules().iter().filter(|r| r.name() != rule_name).cloned().collect();
        if let Some(references) = references {
            let priority = existing.map(|r| r.priority()).unwrap_or_else(|| {
                let used: Vec<i32> = rules.iter().map(|r| r.priority()).collect();
                (FIRST_PRIORITY..).find(|p| !used.contains(p)).unwrap_or(FIRST_PRIORITY)
            });
            rules.push(group_rule(group, &rule_name, priority, references)?);
        }
        let unchanged = match (existing, rules.iter().find(|r| r.name() == rule_name)) {
            (None, None) => true,
            (Some(old), Some(new)) => old == new,
            _ => false,
        };
        if unchanged {
            return Ok(false);
        }
        match update_web_acl(waf, &acl, rules, got.lock_token().unwrap_or_default()).await {
            Ok(()) => return Ok(true),
            Err(Some(err)) => return Err(err),
            Err(None) => pause(attempt).await,
        }
    }
    Err(stale(&format!("web ACL {acl_name}")))
}

/// UpdateWebACL replaces the whole ACL: everything but the rules is sent back as read.
/// `Err(None)`: the lock token went stale.
async fn update_web_acl(
    waf: &Client,
    acl: &WebAcl,
    rules: Vec<Rule>,
    lock_token: &str,
) -> Result<(), Option<CloudError>> {
    let update = waf
        .update_web_acl()
        .name(acl.name())
        .scope(Scope::Regional)
        .id(acl.id())
        .set_default_action(acl.default_action().cloned())
        .set_description(acl.description().map(str::to_owned))
        .set_rules(Some(rules))
        .set_visibility_config(acl.visibility_config().cloned())
        .set_custom_response_bodies(acl.custom_response_bodies().cloned())
        .set_captcha_config(acl.captcha_config().cloned())
        .set_challenge_config(acl.challenge_config().cloned())
        .set_token_domains(Some(acl.token_domains().to_vec()).filter(|d| !d.is_empty()))
        .set_association_config(acl.association_config().cloned())
        .lock_token(lock_token);
    match update.send().await {
        Ok(_) => Ok(()),
        Err(err) if code(&err) == Some(STALE) => Err(None),
        Err(err) => Err(Some(sdk_error("WAFv2", "UpdateWebACL", err))),
    }
}

/// Block a request to the group's paths whose source is in none of `references`.
fn group_rule(
    group: &str,
    name: &str,
    priority: i32,
    references: &[String],
) -> Result<Rule, CloudError> {
    let invalid = |e: aws_sdk_wafv2::error::BuildError| {
        CloudError::Refused(format!("web ACL rule {name}: {e}"))
    };
    let path = |search: String, position: PositionalConstraint| -> Result<Statement, CloudError> {
        let transformation = TextTransformation::builder()
            .priority(0)
            .r#type(TextTransformationType::None)
            .build()
            .map_err(invalid)?;
        let matching = ByteMatchStatement::builder()
            .search_string(Blob::new(search.into_bytes()))
            .field_to_match(FieldToMatch::builder().uri_path(UriPath::builder().build()).build())
            .text_transformations(transformation)
            .positional_constraint(position)
            .build()
            .map_err(invalid)?;
        Ok(Statement::builder().byte_match_statement(matching).build())
    };
    // `/mcp/<group>` and below, not `/mcp/<group>x`.
    let paths = OrStatement::builder()
        .statements(path(format!("/mcp/{group}"), PositionalConstraint::Exactly)?)
        .statements(path(format!("/mcp/{group}/"), PositionalConstraint::StartsWith)?)
        .build()
        .map_err(invalid)?;
    let sets: Vec<Statement> = references
        .iter()
        .map(|arn| {
            let reference = IpSetReferenceStatement::builder().arn(arn).build().map_err(invalid)?;
            Ok(Statement::builder().ip_set_reference_statement(reference).build())
        })
        .collect::<Result<_, CloudError>>()?;
    let allowed = match sets.len() {
        1 => sets.into_iter().next().expect("one"),
        _ => Statement::builder()
            .or_statement(
                OrStatement::builder().set_statements(Some(sets)).build().map_err(invalid)?,
            )
            .build(),
    };
    let outside = Statement::builder()
        .not_statement(NotStatement::builder().statement(allowed).build())
        .build();
    let statement = Statement::builder()
        .and_statement(
            AndStatement::builder()
                .statements(Statement::builder().or_statement(paths).build())
                .statements(outside)
                .build()
                .map_err(invalid)?,
        )
        .build();
    let visibility = VisibilityConfig::builder()
        .sampled_requests_enabled(true)
        .cloud_watch_metrics_enabled(true)
        .metric_name(name)
        .build()
        .map_err(invalid)?;
    Rule::builder()
        .name(name)
        .priority(priority)
        .statement(statement)
        .action(RuleAction::builder().block(BlockAction::builder().build()).build())
        .visibility_config(visibility)
        .build()
        .map_err(invalid)
}

async fn refuse_unless_ours(
    waf: &Client,
    name: &str,
    arn: &str,
    group: &str,
) -> Result<(), CloudError> {
    let listed = waf.list_tags_for_resource().resource_arn(arn).send().await;
    let listed = listed.map_err(|e| sdk_error("WAFv2", "ListTagsForResource", e))?;
    let tags = listed.tag_info_for_resource().map(|t| t.tag_list()).unwrap_or_default();
    let has = |key: &str, value: &str| tags.iter().any(|t| t.key() == key && t.value() == value);
    if has(MANAGED_BY_TAG, MANAGED_BY) && has(GROUP_TAG, group) {
        return Ok(());
    }
    Err(CloudError::NotOurs(format!(
        "WAF IP set {name} exists and ramen did not make it for group {group}; remove it or rename it"
    )))
}

fn tags(group: &str) -> Vec<Tag> {
    [(MANAGED_BY_TAG, MANAGED_BY), (GROUP_TAG, group)]
        .into_iter()
        .map(|(key, value)| Tag::builder().key(key).value(value).build())
        .collect::<Result<_, _>>()
        .expect("tags have a key and a value")
}

fn same_set(a: &[String], b: &[String]) -> bool {
    let norm = |list: &[String]| {
        let mut list: Vec<String> = list.iter().map(|s| s.to_ascii_lowercase()).collect();
        list.sort();
        list.dedup();
        list
    };
    norm(a) == norm(b)
}

fn stale(what: &str) -> CloudError {
    CloudError::Unavailable(format!(
        "{what} kept changing under us ({ATTEMPTS} stale lock tokens); retrying later"
    ))
}
