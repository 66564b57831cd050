//! The placement's route on the shared ALB listener: its target group (the workers' pod IPs
//! on the MCP port, health-checked on the node's public `/readyz`), a *zone rule* sending the
//! group's paths with `ramen-zone: <zone>` to that target group alone, and the group's
//! *weighted rule* forwarding the group's other requests across every zone's target group
//! (the weights the rebalancer moves).
//!
//! Zone rules take priorities from 1, weighted rules from [`WEIGHTED_FROM`], so a group's zone
//! rules are always matched before its weighted rule. Rules are recognised by their conditions
//! (the group's path patterns, the zone header) and deleted only when they carry ramen's tags.

use std::collections::BTreeSet;
use std::net::IpAddr;

use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, ForwardActionConfig, HttpHeaderConditionConfig,
    PathPatternConditionConfig, ProtocolEnum, Rule, RuleCondition, Tag, TargetDescription,
    TargetGroupTuple, TargetTypeEnum,
};

use super::errors::{code, sdk_error};
use crate::{
    ATTEMPTS, CloudError, GROUP_TAG, MANAGED_BY, MANAGED_BY_TAG, Made, Outcome, PlacementRef,
    ZONE_HEADER, ZONE_TAG, names, pause,
};

/// First priority of the groups' weighted rules; zone rules sit below it.
pub const WEIGHTED_FROM: i32 = 25_000;
const LAST_PRIORITY: i32 = 50_000;
/// A zone joining a group alone starts at this weight (ELBv2 takes 0..=999).
const FIRST_WEIGHT: i32 = 100;

pub async fn ensure(elb: &Client, placement: &PlacementRef<'_>) -> Result<Made, CloudError> {
    let (target_group, created) = ensure_target_group(elb, placement).await?;
    let listener = &placement.cluster.listener_arn;
    let mut notes = Vec::new();
    if created {
        notes.push(format!(
            "target group {} created",
            names::target_group(placement.group, placement.zone)
        ));
    }
    let mut attempt = 0;
    let (zone_rule, weighted_rule) = loop {
        let rules = listener_rules(elb, listener).await?;
        let zone_rule = match rules
            .iter()
            .find(|r| is_zone_rule(r, placement.group, placement.zone))
        {
            Some(rule) => rule.rule_arn().unwrap_or_default().to_owned(),
            None => {
                let conditions = vec![paths(placement.group), zone_header(placement.zone)];
                let actions = vec![forward(&[(target_group.clone(), 1)])];
                match create_rule(
                    elb,
                    listener,
                    &rules,
                    1,
                    conditions,
                    actions,
                    placement,
                    Some(placement.zone),
                )
                .await?
                {
                    Some(arn) => {
                        notes
                            .push(format!("zone rule ({ZONE_HEADER}: {}) created", placement.zone));
                        arn
                    }
                    None => {
                        retry_or_fail(&mut attempt, "a listener priority was taken meanwhile")
                            .await?;
                        continue;
                    }
                }
            }
        };
        let weighted = rules.iter().find(|r| is_weighted_rule(r, placement.group));
        let weighted_rule = match weighted {
            Some(rule) => {
                let arn = rule.rule_arn().unwrap_or_default().to_owned();
                let mut tuples = forwarded(rule);
                if !tuples.iter().any(|(t, _)| *t == target_group) {
                    let mean = match tuples.len() {
                        0 => FIRST_WEIGHT,
                        n => (tuples.iter().map(|(_, w)| *w).sum::<i32>() / n as i32).max(1),
                    };
                    tuples.push((target_group.clone(), mean));
                    let modify = elb.modify_rule().rule_arn(&arn).actions(forward(&tuples));
                    modify.send().await.map_err(|e| sdk_error("ELBv2", "ModifyRule", e))?;
                    notes.push(format!("joined the group's weighted rule at weight {mean}"));
                }
                arn
            }
            None => {
                let conditions = vec![paths(placement.group)];
                let actions = vec![forward(&[(target_group.clone(), FIRST_WEIGHT)])];
                match create_rule(
                    elb,
                    listener,
                    &rules,
                    WEIGHTED_FROM,
                    conditions,
                    actions,
                    placement,
                    None,
                )
                .await?
                {
                    Some(arn) => {
                        notes.push("the group's weighted rule created".to_owned());
                        arn
                    }
                    None => {
                        retry_or_fail(&mut attempt, "a listener priority was taken meanwhile")
                            .await?;
                        continue;
                    }
                }
            }
        };
        // Read back: another writer's change to the weighted rule may have replaced ours.
        let now = listener_rules(elb, listener).await?;
        let joined = now
            .iter()
            .find(|r| is_weighted_rule(r, placement.group))
            .is_some_and(|r| forwarded(r).iter().any(|(t, _)| *t == target_group));
        if joined {
            break (zone_rule, weighted_rule);
        }
        retry_or_fail(&mut attempt, "the group's weighted rule changed meanwhile").await?;
    };
    let note = if notes.is_empty() { "route in place".to_owned() } else { notes.join("; ") };
    Ok(Made { resources: vec![target_group, zone_rule, weighted_rule], note })
}

pub async fn sync_targets(
    elb: &Client,
    placement: &PlacementRef<'_>,
    ips: &[IpAddr],
) -> Result<Made, CloudError> {
    let Some(target_group) = find_target_group(elb, placement).await? else {
        return Err(CloudError::Unavailable(format!(
            "target group {} does not exist yet (the placement's route is made first)",
            names::target_group(placement.group, placement.zone)
        )));
    };
    let health = elb.describe_target_health().target_group_arn(&target_group).send().await;
    let health = health.map_err(|e| sdk_error("ELBv2", "DescribeTargetHealth", e))?;
    let registered: BTreeSet<String> = health
        .target_health_descriptions()
        .iter()
        .filter_map(|d| d.target()?.id().map(str::to_owned))
        .collect();
    let wanted: BTreeSet<String> = ips.iter().map(IpAddr::to_string).collect();
    let target =
        |id: &String| TargetDescription::builder().id(id).port(i32::from(placement.port)).build();
    let add: Vec<TargetDescription> = wanted.difference(&registered).map(target).collect();
    let drop: Vec<TargetDescription> = registered.difference(&wanted).map(target).collect();
    if !add.is_empty() {
        let register =
            elb.register_targets().target_group_arn(&target_group).set_targets(Some(add.clone()));
        register.send().await.map_err(|e| sdk_error("ELBv2", "RegisterTargets", e))?;
    }
    if !drop.is_empty() {
        let deregister = elb
            .deregister_targets()
            .target_group_arn(&target_group)
            .set_targets(Some(drop.clone()));
        deregister.send().await.map_err(|e| sdk_error("ELBv2", "DeregisterTargets", e))?;
    }
    Ok(Made {
        resources: vec![target_group],
        note: format!(
            "{} target(s) registered, {} added, {} removed",
            wanted.len(),
            add.len(),
            drop.len()
        ),
    })
}

pub async fn remove(elb: &Client, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
    let listener = &placement.cluster.listener_arn;
    let target_group = find_target_group(elb, placement).await?;
    let mut notes = Vec::new();
    let rules = listener_rules(elb, listener).await?;
    if let Some(rule) = rules.iter().find(|r| is_zone_rule(r, placement.group, placement.zone))
        && tagged_ours(elb, rule, placement.group).await?
    {
        delete_rule(elb, rule).await?;
        notes.push("zone rule deleted".to_owned());
    }
    if let (Some(target_group), Some(rule)) =
        (&target_group, rules.iter().find(|r| is_weighted_rule(r, placement.group)))
        && tagged_ours(elb, rule, placement.group).await?
    {
        let left: Vec<(String, i32)> =
            forwarded(rule).into_iter().filter(|(t, _)| t != target_group).collect();
        if left.is_empty() {
            delete_rule(elb, rule).await?;
            notes.push("the group's weighted rule deleted (its last zone)".to_owned());
        } else if left.len() < forwarded(rule).len() {
            let modify = elb
                .modify_rule()
                .rule_arn(rule.rule_arn().unwrap_or_default())
                .actions(forward(&left));
            modify.send().await.map_err(|e| sdk_error("ELBv2", "ModifyRule", e))?;
            notes.push(format!("left the group's weighted rule ({} zone(s) remain)", left.len()));
        }
    }
    let name = names::target_group(placement.group, placement.zone);
    if let Some(target_group) = target_group {
        match elb.delete_target_group().target_group_arn(&target_group).send().await {
            Ok(_) => notes.push(format!("target group {name} deleted")),
            Err(err) if code(&err) == Some("TargetGroupNotFound") => {}
            Err(err) if code(&err) == Some("ResourceInUse") => {
                return Ok(Outcome::Waiting(format!(
                    "target group {name} is still in use by a listener or rule: {}",
                    aws_sdk_elasticloadbalancingv2::error::DisplayErrorContext(&err)
                )));
            }
            Err(err) => return Err(sdk_error("ELBv2", "DeleteTargetGroup", err)),
        }
    } else {
        notes.push(format!("target group {name} is gone"));
    }
    Ok(Outcome::Done(notes.join("; ")))
}

/// The placement's target group (made if missing), and whether this call made it.
async fn ensure_target_group(
    elb: &Client,
    placement: &PlacementRef<'_>,
) -> Result<(String, bool), CloudError> {
    if let Some(arn) = find_target_group(elb, placement).await? {
        return Ok((arn, false));
    }
    let create = elb
        .create_target_group()
        .name(names::target_group(placement.group, placement.zone))
        .protocol(ProtocolEnum::Http)
        .port(i32::from(placement.port))
        .target_type(TargetTypeEnum::Ip)
        .vpc_id(&placement.cluster.vpc_id)
        .health_check_path("/readyz")
        .health_check_interval_seconds(10)
        .healthy_threshold_count(2)
        .unhealthy_threshold_count(2)
        .set_tags(Some(tags(placement.group, Some(placement.zone))));
    match create.send().await {
        Ok(created) => {
            let arn = created.target_groups().first().and_then(|t| t.target_group_arn());
            let arn = arn.ok_or_else(|| {
                CloudError::Unavailable("CreateTargetGroup answered no ARN".into())
            })?;
            Ok((arn.to_owned(), true))
        }
        Err(err) if code(&err) == Some("DuplicateTargetGroupName") => {
            Err(CloudError::Unavailable(format!(
                "target group {} was being created by another call; retrying",
                names::target_group(placement.group, placement.zone)
            )))
        }
        Err(err) => Err(sdk_error("ELBv2", "CreateTargetGroup", err)),
    }
}

/// The placement's target group by name, checked to be ramen's for this placement.
async fn find_target_group(
    elb: &Client,
    placement: &PlacementRef<'_>,
) -> Result<Option<String>, CloudError> {
    let name = names::target_group(placement.group, placement.zone);
    let arn = match elb.describe_target_groups().names(&name).send().await {
        Ok(found) => {
            found.target_groups().first().and_then(|t| t.target_group_arn()).map(str::to_owned)
        }
        Err(err) if code(&err) == Some("TargetGroupNotFound") => None,
        Err(err) => return Err(sdk_error("ELBv2", "DescribeTargetGroups", err)),
    };
    let Some(arn) = arn else { return Ok(None) };
    let tags = resource_tags(elb, &arn).await?;
    let has = |key: &str, value: &str| tags.iter().any(|(k, v)| k == key && v == value);
    if has(MANAGED_BY_TAG, MANAGED_BY)
        && has(GROUP_TAG, placement.group)
        && has(ZONE_TAG, placement.zone)
    {
        Ok(Some(arn))
    } else {
        Err(CloudError::NotOurs(format!(
            "target group {name} exists and ramen did not make it for {}/{}; remove it or pick another zone name",
            placement.group, placement.zone
        )))
    }
}

async fn resource_tags(elb: &Client, arn: &str) -> Result<Vec<(String, String)>, CloudError> {
    let answer = elb.describe_tags().resource_arns(arn).send().await;
    let answer = answer.map_err(|e| sdk_error("ELBv2", "DescribeTags", e))?;
    Ok(answer
        .tag_descriptions()
        .iter()
        .flat_map(|d| d.tags())
        .map(|t| (t.key().unwrap_or_default().to_owned(), t.value().unwrap_or_default().to_owned()))
        .collect())
}

async fn tagged_ours(elb: &Client, rule: &Rule, group: &str) -> Result<bool, CloudError> {
    let tags = resource_tags(elb, rule.rule_arn().unwrap_or_default()).await?;
    let has = |key: &str, value: &str| tags.iter().any(|(k, v)| k == key && v == value);
    Ok(has(MANAGED_BY_TAG, MANAGED_BY) && has(GROUP_TAG, group))
}

/// Every rule of the listener, all pages.
pub async fn listener_rules(elb: &Client, listener: &str) -> Result<Vec<Rule>, CloudError> {
    let (mut rules, mut marker) = (Vec::new(), None::<String>);
    loop {
        let page =
            elb.describe_rules().listener_arn(listener).set_marker(marker.take()).send().await;
        let page = page.map_err(|e| sdk_error("ELBv2", "DescribeRules", e))?;
        rules.extend(page.rules().iter().cloned());
        match page.next_marker() {
            Some(next) if !next.is_empty() => marker = Some(next.to_owned()),
            _ => return Ok(rules),
        }
    }
}

/// Creates a rule at the first free priority from `from`; `None` when another writer took it
/// between reading and creating (the caller reads again).
#[allow(clippy::too_many_arguments)]
async fn create_rule(
    elb: &Client,
    listener: &str,
    rules: &[Rule],
    from: i32,
    conditions: Vec<RuleCondition>,
    actions: Vec<Action>,
    placement: &PlacementRef<'_>,
    zone: Option<&str>,
) -> Result<Option<String>, CloudError> {
    let used: BTreeSet<i32> = rules.iter().filter_map(|r| r.priority()?.parse().ok()).collect();
    let until = if from < WEIGHTED_FROM { WEIGHTED_FROM } else { LAST_PRIORITY + 1 };
    let Some(priority) = (from..until).find(|p| !used.contains(p)) else {
        return Err(CloudError::Refused(format!(
            "listener {listener} has no free rule priority from {from}"
        )));
    };
    let create = elb
        .create_rule()
        .listener_arn(listener)
        .priority(priority)
        .set_conditions(Some(conditions))
        .set_actions(Some(actions))
        .set_tags(Some(tags(placement.group, zone)));
    match create.send().await {
        Ok(created) => Ok(created.rules().first().and_then(|r| r.rule_arn()).map(str::to_owned)),
        Err(err) if code(&err) == Some("PriorityInUse") => Ok(None),
        Err(err) if code(&err) == Some("TooManyRules") => Err(CloudError::Refused(format!(
            "listener {listener} has no room for another rule (ELBv2 TooManyRules); raise its quota"
        ))),
        Err(err) => Err(sdk_error("ELBv2", "CreateRule", err)),
    }
}

async fn delete_rule(elb: &Client, rule: &Rule) -> Result<(), CloudError> {
    match elb.delete_rule().rule_arn(rule.rule_arn().unwrap_or_default()).send().await {
        Ok(_) => Ok(()),
        Err(err) if code(&err) == Some("RuleNotFound") => Ok(()),
        Err(err) => Err(sdk_error("ELBv2", "DeleteRule", err)),
    }
}

async fn retry_or_fail(attempt: &mut usize, why: &str) -> Result<(), CloudError> {
    *attempt += 1;
    if *attempt >= ATTEMPTS {
        return Err(CloudError::Unavailable(format!("{why}, {ATTEMPTS} times; retrying later")));
    }
    pause(*attempt).await;
    Ok(())
}

fn paths(group: &str) -> RuleCondition {
    let config = PathPatternConditionConfig::builder()
        .set_values(Some(names::group_paths(group).to_vec()))
        .build();
    RuleCondition::builder().field("path-pattern").path_pattern_config(config).build()
}

fn zone_header(zone: &str) -> RuleCondition {
    let config =
        HttpHeaderConditionConfig::builder().http_header_name(ZONE_HEADER).values(zone).build();
    RuleCondition::builder().field("http-header").http_header_config(config).build()
}

fn forward(tuples: &[(String, i32)]) -> Action {
    let groups = tuples.iter().map(|(arn, weight)| {
        TargetGroupTuple::builder().target_group_arn(arn).weight(*weight).build()
    });
    let config = ForwardActionConfig::builder().set_target_groups(Some(groups.collect())).build();
    Action::builder().r#type(ActionTypeEnum::Forward).forward_config(config).build()
}

/// Target groups and weights of a rule's forward actions.
pub fn forwarded(rule: &Rule) -> Vec<(String, i32)> {
    let mut tuples = Vec::new();
    for action in rule.actions() {
        if let Some(config) = action.forward_config() {
            for tuple in config.target_groups() {
                if let Some(arn) = tuple.target_group_arn() {
                    tuples.push((arn.to_owned(), tuple.weight().unwrap_or(1)));
                }
            }
        } else if let Some(arn) = action.target_group_arn() {
            tuples.push((arn.to_owned(), 1));
        }
    }
    tuples
}

/// The values of a rule's condition on `field` (the typed config, or the older `Values`).
fn condition_values<'r>(rule: &'r Rule, field: &str) -> Option<Vec<&'r str>> {
    let condition = rule.conditions().iter().find(|c| c.field() == Some(field))?;
    let typed: Vec<&str> = match field {
        "path-pattern" => {
            condition.path_pattern_config().map(|c| c.values().iter().map(String::as_str).collect())
        }
        "http-header" => condition
            .http_header_config()
            .filter(|c| c.http_header_name().is_some_and(|n| n.eq_ignore_ascii_case(ZONE_HEADER)))
            .map(|c| c.values().iter().map(String::as_str).collect()),
        _ => None,
    }
    .unwrap_or_default();
    if !typed.is_empty() {
        return Some(typed);
    }
    let plain: Vec<&str> = condition.values().iter().map(String::as_str).collect();
    (!plain.is_empty() && field == "path-pattern").then_some(plain)
}

fn has_group_paths(rule: &Rule, group: &str) -> bool {
    let wanted = names::group_paths(group);
    condition_values(rule, "path-pattern").is_some_and(|values| {
        values.len() == wanted.len() && wanted.iter().all(|w| values.contains(&w.as_str()))
    })
}

pub fn is_zone_rule(rule: &Rule, group: &str, zone: &str) -> bool {
    has_group_paths(rule, group)
        && condition_values(rule, "http-header").is_some_and(|v| v == [zone])
}

/// The group's rule without a zone header: the one the rebalancer reweighs.
pub fn is_weighted_rule(rule: &Rule, group: &str) -> bool {
    has_group_paths(rule, group)
        && !rule.conditions().iter().any(|c| c.field() == Some("http-header"))
}

fn tags(group: &str, zone: Option<&str>) -> Vec<Tag> {
    let tag = |key: &str, value: &str| Tag::builder().key(key).value(value).build();
    let mut tags = vec![tag(MANAGED_BY_TAG, MANAGED_BY), tag(GROUP_TAG, group)];
    tags.extend(zone.map(|zone| tag(ZONE_TAG, zone)));
    tags
}
