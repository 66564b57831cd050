//! Before anything is applied: which balancer, which targets, what each measured, and the
//! weights that follow.

use super::{Rebalancer, TargetRecord};
use crate::error::{Error, Result};
use crate::lb::{Measure, ZoneRef};
use crate::model::check_label;
use crate::ports::PortError;
use crate::weights::{self, TargetLoad};

pub(super) struct Planned {
    pub zone: ZoneRef,
    pub targets: Vec<TargetRecord>,
}

impl Rebalancer {
    pub(super) async fn plan(&self, group: &str, zone: &str) -> Result<Planned> {
        check_label("group", group)?;
        check_label("zone", zone)?;
        let info = self.catalog.zone(zone).await.map_err(|e| match e {
            PortError::NotFound(_) => Error::NotFound(format!("zone `{zone}`")),
            other => other.into(),
        })?;
        if self.catalog.get().placement(group, zone).is_none() {
            let catalog = self.catalog.refresh().await?;
            if catalog.placement(group, zone).is_none() {
                return Err(Error::NotFound(format!("placement {group} × {zone}")));
            }
        }
        let zone = ZoneRef {
            group: group.to_owned(),
            zone: zone.to_owned(),
            provider: info.provider,
            region: info.region,
        };
        let targets = self.balancers.for_provider(zone.provider).targets(&zone).await?;
        let mut zones = Vec::with_capacity(targets.len());
        let loads: Vec<TargetLoad> = targets
            .iter()
            .map(|target| {
                let (cell_zone, mut load) = match &target.measure {
                    Measure::Node { zone, node } => (zone, self.cells.node_load(group, zone, node)),
                    Measure::Cell { zone } => (zone, self.cells.cell_load(group, zone, &target.id)),
                };
                load.target = target.id.clone();
                zones.push(cell_zone.clone());
                load
            })
            .collect();
        let weights = weights::compute(&loads, self.settings.weight_floor).map_err(|_| {
            Error::FailedPrecondition(format!(
                "no node of {group} × {} has reported as ready within {:?}: no load to weigh by",
                zone.zone, self.settings.liveness
            ))
        })?;
        let targets = loads
            .into_iter()
            .zip(weights)
            .zip(zones)
            .map(|((load, weight), zone)| TargetRecord {
                target: load.target,
                zone,
                weight,
                live: load.live,
                in_flight: load.in_flight,
                cap: load.cap,
            })
            .collect();
        Ok(Planned { zone, targets })
    }
}
