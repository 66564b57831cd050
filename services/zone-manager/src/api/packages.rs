//! Packages per zone, and the local edge (endpoints and weights).

use ramen_proto::zone::v1 as pb;
use tonic::{Request, Response, Status};

use super::conversions::{self as conv, track_to_proto};
use super::{ZoneApi, caller};
use crate::error::Result;

impl ZoneApi {
    pub(super) async fn do_store_package_report(
        &self,
        request: Request<pb::StorePackageReportRequest>,
    ) -> Result<Response<pb::StorePackageReportResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let result = self
            .manager
            .store_packages(&r.group, &r.zone, &r.environment, &r.commit, r.packages)
            .await;
        self.audited(&caller, "packages.report", &r.group, format!("zone/{}", r.zone), result)
            .await?;
        Ok(Response::new(pb::StorePackageReportResponse {}))
    }

    pub(super) async fn do_list_packages(
        &self,
        request: Request<pb::ListPackagesRequest>,
    ) -> Result<Response<pb::ListPackagesResponse>, Status> {
        let r = request.into_inner();
        let page = crate::store::page(r.page.as_ref())?;
        let (packages, page) = self.manager.list_packages(&r.group, &r.zone, page).await?;
        let packages = packages
            .into_iter()
            .map(|p| pb::ZonePackage {
                zone: p.zone,
                report: Some(p.report),
                disabled: p.disabled,
                commit: p.commit,
                reported_at: conv::timestamp(p.reported_at_ms),
            })
            .collect();
        Ok(Response::new(pb::ListPackagesResponse { packages, page: Some(page) }))
    }

    pub(super) async fn do_set_edge_weights(
        &self,
        request: Request<pb::SetEdgeWeightsRequest>,
    ) -> Result<Response<pb::SetEdgeWeightsResponse>, Status> {
        let caller = caller(&request);
        let r = request.into_inner();
        let weights: Vec<(String, u32)> =
            r.weights.into_iter().map(|w| (w.worker_id, w.weight)).collect();
        let result = self.manager.set_edge_weights(&r.group, &r.zone, &weights).await;
        let effective = self
            .audited(
                &caller,
                "placement.set_edge_weights",
                &r.group,
                format!("zone/{}", r.zone),
                result,
            )
            .await?;
        let weights = effective
            .into_iter()
            .map(|(worker_id, weight)| pb::WorkerWeight { worker_id, weight })
            .collect();
        Ok(Response::new(pb::SetEdgeWeightsResponse { weights }))
    }

    pub(super) async fn do_list_endpoints(
        &self,
        request: Request<pb::ListEndpointsRequest>,
    ) -> Result<Response<pb::ListEndpointsResponse>, Status> {
        let r = request.into_inner();
        let page = crate::store::page(r.page.as_ref())?;
        let (zones, page) =
            self.manager.list_endpoints(&r.group, &r.zones, r.ready_only, page).await?;
        let zones = zones
            .into_iter()
            .map(|z| pb::ZoneEndpoints {
                zone: z.zone,
                ip_rules: z.ip_rules,
                endpoints: z
                    .endpoints
                    .into_iter()
                    .map(|e| pb::Endpoint {
                        worker_id: e.worker_id,
                        track: track_to_proto(e.track) as i32,
                        address: e.address,
                        local_address: e.local_address,
                        weight: e.weight,
                        ready: e.ready,
                        serving: e.serving,
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::ListEndpointsResponse { zones, page: Some(page) }))
    }
}
