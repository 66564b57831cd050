//! The local load balancer: which workers the MCP edge routes a group's calls to, and with
//! what weight (set by the rebalancer).

use std::collections::HashSet;

use ramen_proto::common::v1::PageInfo;

use super::ZoneManager;
use crate::error::{Error, Result};
use crate::model::{PlacementPhase, TrackKind};

use crate::store::Page;
use crate::validate;

/// A worker's weight when none was set.
pub const DEFAULT_WEIGHT: u32 = 100;
/// Weights are relative; this bounds them so sums never overflow.
pub const MAX_WEIGHT: u32 = 1000;

#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub worker_id: String,
    pub track: TrackKind,
    /// host:port of the worker's MCP endpoint (path `/mcp`).
    pub address: String,
    /// `@name` of its abstract Unix socket on the zone's host; empty when it has none.
    pub local_address: String,
    pub weight: u32,
    pub ready: bool,
    /// New sessions and stateless calls may be placed on it (see [`crate::provider::serving`]).
    pub serving: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ZoneEndpoints {
    pub zone: String,
    pub ip_rules: Vec<String>,
    pub endpoints: Vec<Endpoint>,
}

impl ZoneManager {
    /// Sets the weights of the listed workers (others keep theirs); returns every worker's
    /// effective weight.
    pub async fn set_edge_weights(
        &self,
        group: &str,
        zone: &str,
        weights: &[(String, u32)],
    ) -> Result<Vec<(String, u32)>> {
        let record = self.live_placement(group, zone).await?;
        let workers = self.provider_for(&record)?.workers(&record).await?;
        for (id, weight) in weights {
            if !workers.iter().any(|w| &w.id == id) {
                return Err(Error::NotFound(format!("worker `{id}` of {}", record.label())));
            }
            if *weight > MAX_WEIGHT {
                return Err(Error::invalid(
                    "weights",
                    format!("{id}: {weight} is above the maximum weight {MAX_WEIGHT}"),
                ));
            }
        }
        let record = self
            .update_placement(group, zone, |p| {
                for (id, weight) in weights {
                    p.edge_weights.insert(id.clone(), *weight);
                }
                Ok(())
            })
            .await?;
        let weight = |id: &str| record.edge_weights.get(id).copied().unwrap_or(DEFAULT_WEIGHT);
        Ok(workers.iter().map(|w| (w.id.clone(), weight(&w.id))).collect())
    }

    /// Per zone of the group: its IP rules and its workers with addresses and weights.
    /// `ready_only`: only ready stable workers (what the edge sends client calls to).
    pub async fn list_endpoints(
        &self,
        group: &str,
        zones: &[String],
        ready_only: bool,
        page: Page,
    ) -> Result<(Vec<ZoneEndpoints>, PageInfo)> {
        validate::dns_label("group", group)?;
        let (placements, _) = self.list_placements(group, "", Page::all()).await?;
        let mut out = Vec::new();
        for placement in placements {
            let wanted = zones.is_empty() || zones.contains(&placement.zone);
            if !wanted || placement.status == PlacementPhase::TearingDown {
                continue;
            }
            let workers = match self.provider_for(&placement) {
                Ok(provider) => provider.workers(&placement).await?,
                Err(_) => Vec::new(),
            };
            let serving: HashSet<String> =
                crate::provider::serving(&workers).iter().map(|w| w.id.clone()).collect();
            let endpoints = workers
                .into_iter()
                .filter(|w| !ready_only || serving.contains(&w.id))
                .filter(|w| !w.mcp_address.is_empty())
                .map(|w| Endpoint {
                    weight: placement.edge_weights.get(&w.id).copied().unwrap_or(DEFAULT_WEIGHT),
                    ready: w.is_ready(),
                    serving: serving.contains(&w.id),
                    address: w.mcp_address,
                    local_address: w.mcp_local,
                    track: w.track,
                    worker_id: w.id,
                })
                .collect();
            out.push(ZoneEndpoints {
                zone: placement.zone.clone(),
                ip_rules: placement.ip_rules.clone(),
                endpoints,
            });
        }
        Ok(page.slice(out))
    }
}
