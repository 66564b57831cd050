//! AWS: target-group weights on the ELBv2 listener's forward action.
//!
//! Contract with the provisioning side (`ramen-cloud` makes these for EKS zones): each
//! placement's target group carries the tags [`GROUP_TAG`] = group and [`ZONE_TAG`] = zone, and
//! the group's weighted rule on the shared listener (or a listener of the group's own, by its
//! default action) forwards to its zones' target groups with a weighted forward action.
//! Rebalancing one zone reweighs every ramen target group of that forward action from its
//! zone's measured load (the weights are relative, so one cannot move alone); target groups
//! without the tags keep their weight.

mod binding;
mod errors;

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_elasticloadbalancingv2::types::{Action, LoadBalancerStateEnum};
use parking_lot::Mutex;

use super::{Applied, LbError, LoadBalancer, Measure, Target, ZoneRef};
use crate::model::Caller;
use binding::Binding;
use errors::sdk_error;

pub const GROUP_TAG: &str = "ramen.io/group";
pub const ZONE_TAG: &str = "ramen.io/zone";
/// ELBv2 weights are 0..=999.
const MAX_WEIGHT: u32 = 999;

#[derive(Clone, Debug, Default)]
pub struct AwsSettings {
    /// Empty = derived from the zone's availability zone.
    pub region: String,
    /// Empty = AWS, or `AWS_ENDPOINT_URL`.
    pub endpoint: String,
    /// Static keys (a stand-in such as moto); `None` = the standard AWS chain.
    pub static_keys: Option<(String, String)>,
}

pub struct AwsBalancer {
    settings: AwsSettings,
    clients: Mutex<HashMap<String, Client>>,
}

impl AwsBalancer {
    pub fn new(settings: AwsSettings) -> Self {
        Self { settings, clients: Mutex::default() }
    }

    fn region(&self, zone: &ZoneRef) -> Result<String, LbError> {
        if !self.settings.region.is_empty() {
            return Ok(self.settings.region.clone());
        }
        // `us-east-1a` → `us-east-1`.
        let region = zone.region.trim_end_matches(|c: char| c.is_ascii_lowercase());
        if region.is_empty() || !region.ends_with(|c: char| c.is_ascii_digit()) {
            return Err(LbError::NotConfigured(format!(
                "zone `{}` has region {:?}, not an availability zone; set rebalancer.aws.region",
                zone.zone, zone.region
            )));
        }
        Ok(region.to_owned())
    }

    async fn client(&self, zone: &ZoneRef) -> Result<Client, LbError> {
        let region = self.region(zone)?;
        if let Some(client) = self.clients.lock().get(&region) {
            return Ok(client.clone());
        }
        let mut builder = match &self.settings.static_keys {
            Some((id, secret)) => aws_sdk_elasticloadbalancingv2::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .credentials_provider(Credentials::new(id, secret, None, None, "ramen-static")),
            None => {
                let shared = aws_config::defaults(BehaviorVersion::latest())
                    .region(Region::new(region.clone()))
                    .load()
                    .await;
                aws_sdk_elasticloadbalancingv2::config::Builder::from(&shared)
            }
        };
        // Bounded: an ELBv2 API that accepts and never answers fails the rebalance as
        // transient (retried in the background) instead of holding it.
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .operation_attempt_timeout(std::time::Duration::from_secs(20))
            .operation_timeout(std::time::Duration::from_secs(60))
            .build();
        builder = builder.region(Region::new(region.clone())).timeout_config(timeouts);
        if !self.settings.endpoint.is_empty() {
            builder = builder.endpoint_url(&self.settings.endpoint);
        }
        let client = Client::from_conf(builder.build());
        self.clients.lock().insert(region, client.clone());
        Ok(client)
    }
}

#[async_trait]
impl LoadBalancer for AwsBalancer {
    async fn targets(&self, zone: &ZoneRef) -> Result<Vec<Target>, LbError> {
        let binding = Binding::resolve(&self.client(zone).await?, zone).await?;
        Ok(binding
            .forwarded()
            .into_iter()
            .filter_map(|arn| {
                let zone = binding.zones.get(&arn)?.clone();
                Some(Target { id: arn, measure: Measure::Cell { zone } })
            })
            .collect())
    }

    async fn apply(
        &self,
        _caller: &Caller,
        zone: &ZoneRef,
        weights: &[(String, u32)],
        _ticket: Option<&str>,
    ) -> Result<Applied, LbError> {
        let client = self.client(zone).await?;
        let binding = Binding::resolve(&client, zone).await?;
        let balancer = client
            .describe_load_balancers()
            .load_balancer_arns(&binding.load_balancer)
            .send()
            .await;
        let balancer = balancer.map_err(|e| sdk_error("DescribeLoadBalancers", e))?;
        let state = balancer
            .load_balancers()
            .first()
            .and_then(|b| b.state())
            .and_then(|s| s.code())
            .cloned();
        if state == Some(LoadBalancerStateEnum::Provisioning) {
            let note = "load balancer is still provisioning; retrying".to_owned();
            return Ok(Applied::Reconciling { note, ticket: None });
        }
        let wanted = reweighed(&binding.listener_actions, weights);
        if wanted == binding.listener_actions {
            return Ok(Applied::Done("target-group weights already in place".into()));
        }
        let place = match &binding.rule {
            Some(rule) => {
                let modify = client.modify_rule().rule_arn(rule).set_actions(Some(wanted.clone()));
                modify.send().await.map_err(|e| sdk_error("ModifyRule", e))?;
                format!("rule {rule}")
            }
            None => {
                let modify = client
                    .modify_listener()
                    .listener_arn(&binding.listener)
                    .set_default_actions(Some(wanted.clone()));
                modify.send().await.map_err(|e| sdk_error("ModifyListener", e))?;
                format!("listener {}", binding.listener)
            }
        };
        let now = binding::current_actions(&client, &binding).await?;
        if reweighed(&now, weights) == now {
            Ok(Applied::Done(format!("target-group weights set on {place}")))
        } else {
            let note = "listener does not show the new weights yet; retrying".to_owned();
            Ok(Applied::Reconciling { note, ticket: None })
        }
    }
}

/// `actions` with the weight of every listed target group replaced (capped at 999).
fn reweighed(actions: &[Action], weights: &[(String, u32)]) -> Vec<Action> {
    let mut actions = actions.to_vec();
    for tuple in actions
        .iter_mut()
        .filter_map(|a| a.forward_config.as_mut())
        .flat_map(|f| f.target_groups.iter_mut().flatten())
    {
        let arn = tuple.target_group_arn.as_deref().unwrap_or_default();
        if let Some((_, weight)) = weights.iter().find(|(t, _)| t == arn) {
            tuple.weight = Some(weight.min(&MAX_WEIGHT).to_owned() as i32);
        }
    }
    actions
}
