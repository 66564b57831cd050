//! The group's edge rule: one Cloud Armor security policy `ramen-<group>`, attached to every
//! backend service of the group, that allows the union of its zones' networks (rules of at
//! most ten ranges each, Cloud Armor's limit for a basic match) over a default deny, or allows
//! everyone.
//!
//! Rules change through the per-rule methods (the policy's `patch` cannot change rules), so
//! a change first *claims* the policy: a patch of its description, carrying a digest of the
//! rules wanted, made with the fingerprint read. Two writers cannot both claim from one read
//! (the second's fingerprint is stale, so it reads again); after applying its rules a writer
//! reads back, and one whose claim a later writer replaced leaves the policy to it, while one
//! that still holds the claim repeats until the rules are exactly its own. So the last claim
//! wins whole, and no change is half-lost between two.

use google_cloud_compute_v1::model::security_policy::Type as PolicyType;
use google_cloud_compute_v1::model::security_policy_rule_matcher::VersionedExpr;
use google_cloud_compute_v1::model::{
    SecurityPolicy, SecurityPolicyRule, SecurityPolicyRuleMatcher, SecurityPolicyRuleMatcherConfig,
};
use ipnet::IpNet;
use sha2::{Digest, Sha256};

use super::Context;
use super::errors::{Kind, done, gax_error, kind, says};
use super::route::{attach_policy, global, group_services};
use crate::{ATTEMPTS, CloudError, EdgeRule, Made, names, pause};

/// The default rule every security policy has: the lowest precedence.
pub const DEFAULT_PRIORITY: i32 = i32::MAX;
/// ramen's allow rules: 1000, 1001, ... (below them, room for an operator's own rules).
pub const ALLOW_PRIORITIES: std::ops::RangeInclusive<i32> = 1000..=1999;
/// Cloud Armor's limit of source ranges in one basic-match rule.
pub const RANGES_PER_RULE: usize = 10;
const DIGEST_KEY: &str = "ramen.io/rules";

/// The wanted rules by priority: (priority, action, source ranges).
type Wanted = Vec<(i32, String, Vec<String>)>;

fn wanted(rule: EdgeRule<'_>) -> Wanted {
    match rule {
        EdgeRule::Only(nets) => {
            let ranges: Vec<String> = nets.iter().map(IpNet::to_string).collect();
            let mut rules: Wanted = ranges
                .chunks(RANGES_PER_RULE)
                .zip(ALLOW_PRIORITIES)
                .map(|(chunk, priority)| (priority, "allow".to_owned(), chunk.to_vec()))
                .collect();
            rules.push((DEFAULT_PRIORITY, "deny(403)".into(), vec!["*".into()]));
            rules
        }
        _ => vec![(DEFAULT_PRIORITY, "allow".into(), vec!["*".into()])],
    }
}

fn digest(rules: &Wanted) -> String {
    let text = format!("{rules:?}");
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

fn rule_body(priority: i32, action: &str, ranges: &[String], group: &str) -> SecurityPolicyRule {
    let description = if priority == DEFAULT_PRIORITY {
        "default rule".to_owned()
    } else {
        format!("{} allow", names::marker(group, None))
    };
    SecurityPolicyRule::new()
        .set_priority(priority)
        .set_action(action)
        .set_description(description)
        .set_match(
            SecurityPolicyRuleMatcher::new()
                .set_versioned_expr(VersionedExpr::SrcIpsV1)
                .set_config(
                    SecurityPolicyRuleMatcherConfig::new().set_src_ip_ranges(ranges.to_vec()),
                ),
        )
}

fn ranges_of(rule: &SecurityPolicyRule) -> Vec<String> {
    let mut ranges = rule
        .r#match
        .as_ref()
        .and_then(|m| m.config.as_ref())
        .map(|c| c.src_ip_ranges.clone())
        .unwrap_or_default();
    ranges.sort();
    ranges
}

/// The policy's rules that ramen manages, as [`Wanted`].
fn current(policy: &SecurityPolicy) -> Wanted {
    let mut rules: Wanted = policy
        .rules
        .iter()
        .filter_map(|r| {
            let priority = r.priority?;
            let ours = priority == DEFAULT_PRIORITY || ALLOW_PRIORITIES.contains(&priority);
            ours.then(|| (priority, r.action.clone().unwrap_or_default(), ranges_of(r)))
        })
        .collect();
    rules.sort();
    rules
}

fn sorted(rules: &Wanted) -> Wanted {
    let mut rules: Wanted = rules
        .iter()
        .map(|(p, a, r)| {
            let mut r = r.clone();
            r.sort();
            (*p, a.clone(), r)
        })
        .collect();
    rules.sort();
    rules
}

/// The group's policy's URL, when there is one ramen made (new backend services get it).
pub async fn attached_policy(
    context: Context<'_>,
    group: &str,
) -> Result<Option<String>, CloudError> {
    let name = names::compute(group, None);
    Ok(read(context, &name)
        .await?
        .filter(|p| names::marked(p.description.as_deref(), group, Some(None)))
        .map(|p| p.self_link.unwrap_or_else(|| global(context.project, "securityPolicies", &name))))
}

async fn read(context: Context<'_>, name: &str) -> Result<Option<SecurityPolicy>, CloudError> {
    let get = context
        .clients
        .security_policies
        .get()
        .set_project(context.project)
        .set_security_policy(name);
    match context.call("reading a security policy", get.send()).await? {
        Ok(policy) => Ok(Some(policy)),
        Err(err) if kind(&err) == Kind::NotFound => Ok(None),
        Err(err) => Err(gax_error("Compute", &format!("reading security policy {name}"), err)),
    }
}

pub async fn set(
    context: Context<'_>,
    group: &str,
    rule: EdgeRule<'_>,
) -> Result<Made, CloudError> {
    let name = names::compute(group, None);
    if rule == EdgeRule::Remove {
        return remove(context, group, &name).await;
    }
    if let EdgeRule::Only(nets) = rule {
        let most = RANGES_PER_RULE * ALLOW_PRIORITIES.clone().count();
        if nets.len() > most {
            return Err(CloudError::Refused(format!(
                "the group's zones allow {} networks; security policy {name} holds at most {most}",
                nets.len()
            )));
        }
    }
    let wanted = wanted(rule);
    let link = global(context.project, "securityPolicies", &name);
    let mut notes = Vec::new();
    match read(context, &name).await? {
        None => {
            create(context, group, &name, &wanted).await?;
            notes.push(format!("security policy {name} created"));
        }
        Some(policy) if !names::marked(policy.description.as_deref(), group, Some(None)) => {
            return Err(CloudError::NotOurs(format!(
                "security policy {name} exists and ramen did not make it for group {group}; \
                 remove it or rename the group"
            )));
        }
        Some(_) => {}
    }
    if converge(context, group, &name, &wanted).await? {
        notes.push(format!("security policy {name} rules set"));
    }
    for service in group_services(context, group).await? {
        if attach_policy(context, &service, Some(&link)).await? {
            notes.push(format!("attached to backend service {service}"));
        }
    }
    let allowed = match rule {
        EdgeRule::Only(nets) => format!("{} network(s)", nets.len()),
        _ => "everyone".to_owned(),
    };
    notes.push(format!("allows {allowed}"));
    Ok(Made { resources: vec![link], note: notes.join("; ") })
}

async fn create(
    context: Context<'_>,
    group: &str,
    name: &str,
    wanted: &Wanted,
) -> Result<(), CloudError> {
    let rules: Vec<SecurityPolicyRule> =
        wanted.iter().map(|(p, a, r)| rule_body(*p, a, r, group)).collect();
    let body = SecurityPolicy::new()
        .set_name(name)
        .set_type(PolicyType::CloudArmor)
        .set_description(format!("{} {DIGEST_KEY}={}", names::marker(group, None), digest(wanted)))
        .set_rules(rules);
    let what = format!("creating security policy {name}");
    let insert =
        context.clients.security_policies.insert().set_project(context.project).set_body(body);
    match context.call(&what, insert.send()).await? {
        Ok(op) => done(context, &what, op).await,
        // Made by a concurrent call: converging brings its rules to these.
        Err(err) if kind(&err) == Kind::Conflict => Ok(()),
        Err(err) => Err(gax_error("Compute", &what, err)),
    }
}

/// Claims the policy and applies `wanted` until it holds, or a later claim takes over.
/// Answers whether anything changed.
async fn converge(
    context: Context<'_>,
    group: &str,
    name: &str,
    wanted: &Wanted,
) -> Result<bool, CloudError> {
    let client = &context.clients.security_policies;
    let claim = format!("{} {DIGEST_KEY}={}", names::marker(group, None), digest(wanted));
    let want = sorted(wanted);
    let mut changed = false;
    let mut attempt = 0;
    loop {
        let Some(policy) = read(context, name).await? else {
            return Err(CloudError::Unavailable(format!(
                "security policy {name} was deleted while its rules were set; retrying"
            )));
        };
        let held = policy.description.as_deref() == Some(claim.as_str());
        if current(&policy) == want {
            return Ok(changed);
        }
        if changed && !held {
            // A later change claimed the policy after ours: its rules are the newer ones.
            return Ok(true);
        }
        if !held {
            let what = format!("claiming security policy {name}");
            let body = SecurityPolicy::new()
                .set_description(&claim)
                .set_or_clear_fingerprint(policy.fingerprint.clone());
            let patch = client
                .patch()
                .set_project(context.project)
                .set_security_policy(name)
                .set_body(body);
            match context.call(&what, patch.send()).await? {
                Ok(op) => done(context, &what, op).await?,
                Err(err)
                    if attempt + 1 < ATTEMPTS
                        && matches!(kind(&err), Kind::Stale | Kind::NotReady) =>
                {
                    pause(attempt).await;
                    attempt += 1;
                    continue;
                }
                Err(err) => return Err(gax_error("Compute", &what, err)),
            }
        }
        apply(context, group, name, &policy, &want).await?;
        changed = true;
        attempt += 1;
        if attempt >= ATTEMPTS {
            return Err(CloudError::Unavailable(format!(
                "security policy {name}: its rules kept changing under ramen; retrying"
            )));
        }
    }
}

/// The per-rule calls from the policy's rules (as read) to `want`.
async fn apply(
    context: Context<'_>,
    group: &str,
    name: &str,
    policy: &SecurityPolicy,
    want: &Wanted,
) -> Result<(), CloudError> {
    let client = &context.clients.security_policies;
    let have = current(policy);
    let project = context.project;
    for (priority, action, ranges) in want {
        let body = rule_body(*priority, action, ranges, group);
        match have.iter().find(|(p, _, _)| p == priority) {
            Some(existing) if existing.1 == *action && existing.2 == *ranges => {}
            Some(_) => {
                let what = format!("changing rule {priority} of security policy {name}");
                let patch = client
                    .patch_rule()
                    .set_project(project)
                    .set_security_policy(name)
                    .set_priority(*priority)
                    .set_body(body);
                rule_call(context, &what, patch.send()).await?;
            }
            None => {
                let what = format!("adding rule {priority} to security policy {name}");
                let add =
                    client.add_rule().set_project(project).set_security_policy(name).set_body(body);
                rule_call(context, &what, add.send()).await?;
            }
        }
    }
    for (priority, _, _) in &have {
        if *priority != DEFAULT_PRIORITY && !want.iter().any(|(p, _, _)| p == priority) {
            let what = format!("removing rule {priority} of security policy {name}");
            let remove = client
                .remove_rule()
                .set_project(project)
                .set_security_policy(name)
                .set_priority(*priority);
            match context.call(&what, remove.send()).await? {
                Ok(op) => done(context, &what, op).await?,
                Err(err) if matches!(kind(&err), Kind::NotFound) => {}
                Err(err) if says(&err, "does not exist") => {}
                Err(err) => return Err(gax_error("Compute", &what, err)),
            }
        }
    }
    Ok(())
}

/// A rule call whose conflict (a concurrent writer's rule at the same priority) is read again
/// by the converging loop rather than failing the step.
async fn rule_call(
    context: Context<'_>,
    what: &str,
    call: impl std::future::Future<
        Output = Result<google_cloud_compute_v1::model::Operation, google_cloud_compute_v1::Error>,
    >,
) -> Result<(), CloudError> {
    match context.call(what, call).await? {
        Ok(op) => done(context, what, op).await,
        Err(err) if matches!(kind(&err), Kind::Conflict | Kind::NotReady) => Ok(()),
        Err(err) if says(&err, "already exists") || says(&err, "does not exist") => Ok(()),
        Err(err) => Err(gax_error("Compute", what, err)),
    }
}

/// Detached from every backend service of the group, then deleted; gone already is done.
async fn remove(context: Context<'_>, group: &str, name: &str) -> Result<Made, CloudError> {
    let Some(policy) = read(context, name).await? else {
        return Ok(Made {
            resources: Vec::new(),
            note: format!("security policy {name} already gone"),
        });
    };
    if !names::marked(policy.description.as_deref(), group, Some(None)) {
        return Ok(Made {
            resources: Vec::new(),
            note: format!("security policy {name} was not made by ramen; left alone"),
        });
    }
    for service in group_services(context, group).await? {
        attach_policy(context, &service, None).await?;
    }
    let what = format!("deleting security policy {name}");
    let delete = context
        .clients
        .security_policies
        .delete()
        .set_project(context.project)
        .set_security_policy(name);
    match context.call(&what, delete.send()).await? {
        Ok(op) => done(context, &what, op).await?,
        Err(err) if kind(&err) == Kind::NotFound => {}
        Err(err) => return Err(gax_error("Compute", &what, err)),
    }
    Ok(Made { resources: Vec::new(), note: format!("security policy {name} deleted") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_split_into_rules_of_ten_over_a_default_deny() {
        let nets: Vec<IpNet> = (0..23).map(|i| format!("10.{i}.0.0/16").parse().unwrap()).collect();
        let rules = wanted(EdgeRule::Only(&nets));
        assert_eq!(rules.len(), 4);
        assert_eq!(
            rules.iter().map(|r| r.0).collect::<Vec<_>>(),
            [1000, 1001, 1002, DEFAULT_PRIORITY]
        );
        assert_eq!(rules[2].2.len(), 3);
        assert_eq!(rules[3].1, "deny(403)");
        assert_eq!(
            wanted(EdgeRule::Everyone),
            [(DEFAULT_PRIORITY, "allow".into(), vec!["*".into()])]
        );
        assert_ne!(digest(&rules), digest(&wanted(EdgeRule::Everyone)));
    }
}
