//! The packages each zone reported after a deploy.

use ramen_proto::common::v1::{PackageReport, PageInfo};
use ramen_store::Query;

use super::ZoneManager;
use crate::error::Result;
use crate::model::{PackagesRecord, now_ms, placement_id};
use crate::store::{Page, group_zone};
use crate::validate;

/// One package as a zone reported it, with whether it is disabled there.
#[derive(Clone, Debug, PartialEq)]
pub struct ZonePackage {
    pub zone: String,
    pub report: PackageReport,
    pub disabled: bool,
    pub commit: String,
    pub reported_at_ms: i64,
}

impl ZoneManager {
    /// Replaces the zone's previous report for the group (one document, so a reader never sees
    /// half of two reports).
    pub async fn store_packages(
        &self,
        group: &str,
        zone: &str,
        environment: &str,
        commit: &str,
        packages: Vec<PackageReport>,
    ) -> Result<()> {
        self.live_placement(group, zone).await?;
        for package in &packages {
            validate::package(&package.name)?;
        }
        let record = PackagesRecord {
            group: group.to_owned(),
            zone: zone.to_owned(),
            environment: environment.to_owned(),
            commit: commit.to_owned(),
            reported_at_ms: now_ms(),
            packages,
        };
        self.db.packages.put(&placement_id(group, zone), &record).await?;
        Ok(())
    }

    /// Every package of the group (or of one zone), zone by zone, in report order.
    pub async fn list_packages(
        &self,
        group: &str,
        zone: &str,
        page: Page,
    ) -> Result<(Vec<ZonePackage>, PageInfo)> {
        validate::dns_label("group", group)?;
        let reports = self
            .db
            .packages
            .find(&Query::new().filter(group_zone(group, zone)).sort_asc("zone"))
            .await?;
        let mut packages = Vec::new();
        for report in reports.into_iter().map(|r| r.value) {
            let disabled = match self.find_placement(group, &report.zone).await? {
                Some(placement) => placement.value.disabled_packages,
                None => Vec::new(),
            };
            for package in report.packages {
                packages.push(ZonePackage {
                    zone: report.zone.clone(),
                    disabled: disabled.contains(&package.name),
                    report: package,
                    commit: report.commit.clone(),
                    reported_at_ms: report.reported_at_ms,
                });
            }
        }
        Ok(page.slice(packages))
    }
}
