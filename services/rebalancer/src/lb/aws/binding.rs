//! Finding where a zone's weights live from the tags of the group's target groups: the
//! listener's default forward action (a listener of the group's own), or the group's weighted
//! rule on a shared listener (the rule forwarding to the group's target groups without a
//! `ramen-zone` header condition; the header rules pin one zone and are not weighed).

use std::collections::HashMap;

use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::types::{Action, Rule, TargetGroup};

use super::errors::sdk_error;
use super::{GROUP_TAG, ZONE_TAG};
use crate::lb::{LbError, ZoneRef};

/// DescribeTags takes at most 20 ARNs.
const TAG_BATCH: usize = 20;

pub struct Binding {
    pub load_balancer: String,
    pub listener: String,
    /// The weighted rule holding the forward action; `None` = the listener's default actions.
    pub rule: Option<String>,
    /// The actions holding the weighted forward (the rule's, or the listener's default).
    pub listener_actions: Vec<Action>,
    /// Target group ARN → zone, for every target group tagged with the group.
    pub zones: HashMap<String, String>,
}

impl Binding {
    pub async fn resolve(client: &Client, zone: &ZoneRef) -> Result<Self, LbError> {
        let groups = target_groups(client).await?;
        let zones = tagged(client, &groups, &zone.group).await?;
        let Some(own) = zones.iter().find(|(_, z)| **z == zone.zone).map(|(arn, _)| arn.clone())
        else {
            return Err(LbError::NotFound(format!(
                "no target group tagged {GROUP_TAG}={} {ZONE_TAG}={}",
                zone.group, zone.zone
            )));
        };
        let balancers = groups
            .iter()
            .find(|g| g.target_group_arn() == Some(&own))
            .map(|g| g.load_balancer_arns().to_vec())
            .unwrap_or_default();
        for load_balancer in balancers {
            let listeners =
                client.describe_listeners().load_balancer_arn(&load_balancer).send().await;
            let listeners = listeners.map_err(|e| sdk_error("DescribeListeners", e))?;
            for listener in listeners.listeners() {
                let arn = listener.listener_arn().unwrap_or_default().to_owned();
                if forwards(listener.default_actions()).contains(&own) {
                    return Ok(Self {
                        listener: arn,
                        rule: None,
                        listener_actions: listener.default_actions().to_vec(),
                        load_balancer,
                        zones,
                    });
                }
                if let Some(rule) = weighted_rule(client, &arn, &own).await? {
                    return Ok(Self {
                        listener: arn,
                        rule: rule.rule_arn().map(str::to_owned),
                        listener_actions: rule.actions().to_vec(),
                        load_balancer,
                        zones,
                    });
                }
            }
        }
        Err(LbError::NotFound(format!(
            "no listener or weighted rule forwards to the target group of {} × {} ({own})",
            zone.group, zone.zone
        )))
    }

    /// Target groups of the listener's forward actions, in order.
    pub fn forwarded(&self) -> Vec<String> {
        forwards(&self.listener_actions)
    }
}

fn forwards(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| a.forward_config.as_ref())
        .flat_map(|f| f.target_groups())
        .filter_map(|t| t.target_group_arn().map(str::to_owned))
        .collect()
}

/// The actions holding the weights now (the rule's, or the listener's default).
pub async fn current_actions(client: &Client, binding: &Binding) -> Result<Vec<Action>, LbError> {
    if let Some(rule) = &binding.rule {
        let answer = client.describe_rules().rule_arns(rule).send().await;
        let answer = answer.map_err(|e| sdk_error("DescribeRules", e))?;
        return Ok(answer.rules().first().map(|r| r.actions().to_vec()).unwrap_or_default());
    }
    let answer = client.describe_listeners().listener_arns(&binding.listener).send().await;
    let answer = answer.map_err(|e| sdk_error("DescribeListeners", e))?;
    Ok(answer.listeners().first().map(|l| l.default_actions().to_vec()).unwrap_or_default())
}

/// The listener's rule forwarding to `own` without a header condition, if any.
async fn weighted_rule(
    client: &Client,
    listener: &str,
    own: &str,
) -> Result<Option<Rule>, LbError> {
    let mut marker: Option<String> = None;
    loop {
        let page =
            client.describe_rules().listener_arn(listener).set_marker(marker.take()).send().await;
        let page = page.map_err(|e| sdk_error("DescribeRules", e))?;
        let found = page.rules().iter().find(|rule| {
            !rule.is_default().unwrap_or(false)
                && !rule.conditions().iter().any(|c| c.field() == Some("http-header"))
                && forwards(rule.actions()).iter().any(|t| t == own)
        });
        if let Some(rule) = found {
            return Ok(Some(rule.clone()));
        }
        match page.next_marker() {
            Some(next) if !next.is_empty() => marker = Some(next.to_owned()),
            _ => return Ok(None),
        }
    }
}

async fn target_groups(client: &Client) -> Result<Vec<TargetGroup>, LbError> {
    let mut all = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let answer = client.describe_target_groups().set_marker(marker.take()).send().await;
        let answer = answer.map_err(|e| sdk_error("DescribeTargetGroups", e))?;
        all.extend(answer.target_groups().iter().cloned());
        match answer.next_marker() {
            Some(next) if !next.is_empty() => marker = Some(next.to_owned()),
            _ => return Ok(all),
        }
    }
}

/// ARN → zone of the target groups tagged with `group`.
async fn tagged(
    client: &Client,
    groups: &[TargetGroup],
    group: &str,
) -> Result<HashMap<String, String>, LbError> {
    let arns: Vec<String> =
        groups.iter().filter_map(|g| g.target_group_arn().map(str::to_owned)).collect();
    let mut zones = HashMap::new();
    for batch in arns.chunks(TAG_BATCH) {
        let answer = client.describe_tags().set_resource_arns(Some(batch.to_vec())).send().await;
        let answer = answer.map_err(|e| sdk_error("DescribeTags", e))?;
        for description in answer.tag_descriptions() {
            let tag = |key: &str| {
                description.tags().iter().find(|t| t.key() == Some(key)).and_then(|t| t.value())
            };
            if tag(GROUP_TAG) == Some(group)
                && let (Some(zone), Some(arn)) = (tag(ZONE_TAG), description.resource_arn())
            {
                zones.insert(arn.to_owned(), zone.to_owned());
            }
        }
    }
    Ok(zones)
}
