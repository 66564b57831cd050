//! The local balancer: the api-gateway edge draws each new session's worker by the weights
//! the zone-manager serves in `ListEndpoints`; `SetEdgeWeights` changes them at once.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Applied, LbError, LoadBalancer, Measure, Target, ZoneRef};
use crate::model::Caller;
use crate::ports::{PortError, ZonePort};

pub struct LocalBalancer {
    zones: Arc<dyn ZonePort>,
}

impl LocalBalancer {
    pub fn new(zones: Arc<dyn ZonePort>) -> Self {
        Self { zones }
    }
}

fn lb_error(err: PortError) -> LbError {
    match err {
        PortError::Unavailable(m) => LbError::Transient(m),
        PortError::NotFound(m) => LbError::NotFound(m),
        PortError::Refused(m) => LbError::Refused(m),
    }
}

#[async_trait]
impl LoadBalancer for LocalBalancer {
    async fn targets(&self, zone: &ZoneRef) -> Result<Vec<Target>, LbError> {
        let workers = self.zones.workers(&zone.group, &zone.zone).await.map_err(lb_error)?;
        let targets: Vec<Target> = workers
            .into_iter()
            .filter(|w| w.stable)
            .map(|w| Target {
                measure: Measure::Node { zone: zone.zone.clone(), node: w.id.clone() },
                id: w.id,
            })
            .collect();
        if targets.is_empty() {
            return Err(LbError::NotFound(format!(
                "{} × {} has no stable workers to weigh",
                zone.group, zone.zone
            )));
        }
        Ok(targets)
    }

    async fn apply(
        &self,
        caller: &Caller,
        zone: &ZoneRef,
        weights: &[(String, u32)],
        _ticket: Option<&str>,
    ) -> Result<Applied, LbError> {
        let effective = self
            .zones
            .set_edge_weights(caller, &zone.group, &zone.zone, weights)
            .await
            .map_err(lb_error)?;
        let missing: Vec<&str> =
            weights.iter().filter(|w| !effective.contains(w)).map(|(id, _)| id.as_str()).collect();
        if missing.is_empty() {
            Ok(Applied::Done(format!("edge weights set on {} workers", weights.len())))
        } else {
            Ok(Applied::Reconciling {
                note: format!(
                    "edge does not show the new weight of {} yet; retrying",
                    missing.join(", ")
                ),
                ticket: None,
            })
        }
    }
}
